/**
 * The child processes a bench run starts (the servers under test, the soak's
 * redis-server) do not outlive it: SIGINT, SIGTERM or SIGHUP to the runner
 * stops them (SIGTERM, SIGKILL after 10 s; a second signal SIGKILLs at once)
 * and then exits 130 / 143 / 129; any other exit of the runner, a crash
 * included, sends them SIGTERM on its way out. Only SIGKILL of the runner
 * leaves them behind.
 */
import type { ChildProcess } from 'node:child_process';

const live = new Set<ChildProcess>();
let installed = false;
let stopping = false;

const running = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;
const EXIT_CODES = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const;

/** Registers a child to stop with the runner; returns it. */
export function track<C extends ChildProcess>(child: C): C {
  install();
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

function install(): void {
  if (installed) return;
  installed = true;
  // 'exit' runs synchronously: a signal is all that can be sent (the servers drain on their own).
  process.once('exit', () => {
    for (const c of live) if (running(c)) c.kill('SIGTERM');
  });
  for (const signal of Object.keys(EXIT_CODES) as (keyof typeof EXIT_CODES)[])
    process.on(signal, () => void stopAll(signal));
}

async function stopAll(signal: keyof typeof EXIT_CODES): Promise<void> {
  if (stopping) {
    for (const c of live) if (running(c)) c.kill('SIGKILL');
    process.exit(EXIT_CODES[signal]);
  }
  stopping = true;
  process.stderr.write(`\nbench: ${signal}: stopping the ${live.size} process(es) it started\n`);
  const hard = setTimeout(() => {
    for (const c of live) if (running(c)) c.kill('SIGKILL');
  }, 10_000);
  await Promise.all(
    [...live].map(
      (c) =>
        new Promise<void>((resolve) => {
          if (!running(c)) return resolve();
          c.once('exit', () => resolve());
          c.kill('SIGTERM');
        }),
    ),
  );
  clearTimeout(hard);
  process.exit(EXIT_CODES[signal]);
}
