/**
 * The client is typed by path and parameters: tsc rejects a misspelt query parameter, an unknown
 * path parameter and a wrong GraphQL variable (clients/typescript/fixtures/wrong-parameters.ts), and
 * accepts the same calls spelt right (right-parameters.ts).
 */
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(__dirname, '../..');
const FIXTURES = path.join(root, 'clients/typescript/fixtures');

/** tsc (the project's compiler options, no emit) on one file: its diagnostics as "line code message". */
function typecheck(file: string): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(root, 'tsconfig.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail(d.messageText) },
  )!;
  const program = ts.createProgram([path.join(FIXTURES, file)], {
    ...config.options,
    noEmit: true,
    incremental: false,
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const line = d.file ? d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1 : 0;
    const where = d.file ? path.relative(root, d.file.fileName) : '';
    return `${where}:${line} TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

describe('tsc on code using the client', () => {
  test('a wrong parameter name fails tsc, naming it', () => {
    const errors = typecheck('wrong-parameters.ts');
    expect(errors).toHaveLength(3);
    expect(errors[0]).toMatch(
      /^clients\/typescript\/fixtures\/wrong-parameters\.ts:11 TS(2353|2561) .*'per_pag' does not exist/,
    );
    expect(errors[0]).toMatch(/Did you mean to write 'per_page'\?/);
    expect(errors[1]).toMatch(
      /wrong-parameters\.ts:13 TS2353 .*'town' does not exist in type '\{ state: string; city: string; \}'/,
    );
    expect(errors[2]).toMatch(/wrong-parameters\.ts:15 TS2353 .*'barId' does not exist/);
  });

  test('the same calls spelt right compile', () => {
    expect(typecheck('right-parameters.ts')).toEqual([]);
  });
});
