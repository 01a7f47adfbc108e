/**
 * jest's node environment, with one change at the end of a worker's life: when its event loop is
 * empty (jest has sent its last message and every file's teardown has run), the worker leaves with
 * process.exit instead of the natural exit.
 *
 * Why: jest gives a worker 500 ms to exit, then kills it and prints "A worker process has failed
 * to exit gracefully … likely caused by tests leaking". Nothing leaked here: no handle, timer or
 * socket was left (checked per file with process.getActiveResourcesInfo), yet the natural exit,
 * which tears down V8's heap (0.4–1.1 GB after a worker's files) and then the process's memory,
 * took 440–560 ms on a PVM guest; process.exit skips the heap's teardown (200–240 ms there).
 */
import { TestEnvironment } from 'jest-environment-node';

let exitOnEmptyLoop = false;

export default class NodeEnvironment extends TestEnvironment {
  override async setup(): Promise<void> {
    // (a worker is a child process with jest's IPC channel; a run in band is left as it is)
    if (!exitOnEmptyLoop && typeof process.send === 'function') {
      exitOnEmptyLoop = true;
      process.once('beforeExit', (code) => process.exit(code));
    }
    await super.setup();
  }
}
