// typescript-eslint's recommended rules over the TypeScript sources; Prettier owns formatting.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/',
      '.data/',
      'node_modules/',
      'coverage/',
      // The TypeScript client's generated code (npm run client:generate) and build.
      'clients/typescript/src/generated/',
      'clients/typescript/dist/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        URL: 'readonly',
        TextDecoder: 'readonly',
        TextEncoder: 'readonly',
        AbortController: 'readonly',
        fetch: 'readonly',
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // The browser pages (web/): ES modules served as they are, with the browser's globals.
    files: ['web/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: {
        window: 'readonly',
        document: 'readonly',
        location: 'readonly',
        navigator: 'readonly',
        sessionStorage: 'readonly',
        URLSearchParams: 'readonly',
      },
    },
  },
  {
    // A plain CommonJS child process started by the operator tests.
    files: ['test/operator/child-server.js', 'test/hardening/run-ts.js'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
