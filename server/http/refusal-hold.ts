/**
 * Holding a refused key's or blocked address's 429s (the refused-key shortcut's, refused-shortcut.ts).
 *
 * A key the process already refuses and that keeps sending has not waited its
 * Retry-After. Its next 429 is written half to all of `ms` later, at random, and
 * at most when the refusing window ends. (At random: a flood's connections
 * would otherwise stay in step, their answers all due in the same millisecond
 * every `ms`, a burst that holds up everyone else's answers.)
 *
 * Over HTTP/1.1 a connection carries one request at a time, so a client
 * flooding over N connections gets about N answers per 0.75 `ms`: a flood of
 * 429s then costs the server, and the other keys sharing its cores, almost
 * nothing. A client that honours Retry-After retries when it would have:
 * Retry-After is counted when the 429 is written, to the same window end. Each
 * held answer is a timer and an idle socket; past `max` held at once, 429s are
 * written at once as before (a flood spread over more connections than that is
 * for the load balancer's limits). A client that goes away while held is
 * neither answered nor logged, as on the usual way (its `finish` never comes).
 */
import type { Response } from 'express';
import { rateLimitRefusalsHeld } from '../metrics';

export interface RefusalHoldSettings {
  /** How long a refused key's or address's 429 is held (RATE_LIMIT_REFUSAL_HOLD_MS; 0: written at once). */
  ms: number;
  /** At most this many held at once in the process (RATE_LIMIT_REFUSAL_HOLD_MAX). */
  max: number;
}

export class RefusalHold {
  /** 429s held now. */
  private holding = 0;

  constructor(
    private readonly settings: RefusalHoldSettings,
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {}

  get held(): number {
    return this.holding;
  }

  /**
   * Calls `write` once the hold is over and says true; or says false (write at once) when the
   * refusing window (`until`, ms) ends first or `max` answers are held already.
   */
  defer(res: Response, until: number, write: () => void): boolean {
    const ms = Math.min(Math.round(this.settings.ms * (0.5 + this.random() / 2)), until - this.now());
    if (ms <= 0) return false;
    if (this.holding >= this.settings.max) {
      rateLimitRefusalsHeld.inc({ outcome: 'full' });
      return false;
    }
    this.holding++;
    const release = () => {
      this.holding--;
      res.off('close', gone);
    };
    const timer = setTimeout(() => {
      release();
      rateLimitRefusalsHeld.inc({ outcome: 'written' });
      write();
    }, ms);
    const gone = () => {
      clearTimeout(timer);
      release();
      rateLimitRefusalsHeld.inc({ outcome: 'client_gone' });
    };
    res.once('close', gone);
    return true;
  }
}

/** The hold the settings ask for, or none (ms or max 0). */
export function refusalHold(settings: RefusalHoldSettings | undefined): RefusalHold | undefined {
  return settings && settings.ms > 0 && settings.max > 0 ? new RefusalHold(settings) : undefined;
}
