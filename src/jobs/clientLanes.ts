import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { backoffSeconds } from "../lib/backoff";
import { log } from "../lib/log";
import { onFirstUse } from "../lib/onFirstUse";
import { outboundTimeOf } from "../lib/outboundClock";
import type { JobMessage } from "../services/shared";
import { LANE_SHARES, LANES, type Lane, type LaneJob } from "./lanes";
import type { LaneWork } from "./laneWork";

/** What the lanes run, loaded by the first job an isolate's lanes start (src/index.ts). */
export const loadLaneWork = onFirstUse(() => import("./laneWork"));

/** A client's time left on one key: `level` seconds at `at`, refilled at the lane's rate up to a minute's worth. */
interface Budget {
  level: number;
  at: number;
}

type WorkRow = {
  id: number;
  queue: string;
  lane: Lane;
  key: string;
  body: string;
  attempts: number;
};

/** A run of the alarm stops starting jobs after this long and goes on in the next (an alarm's wall time is bounded). */
const ALARM_RUN_MS = 5 * 60_000;

/**
 * One client's share of every shared lane (one object per client id). Whoever sends the client's jobs
 * hands them here (`admit`, src/jobs/handOver.ts) and is done: the jobs wait in this object's storage,
 * never in a shared queue in front of another client's jobs, and run from here within the client's
 * share, so however much a client queues, and however it spreads it over endpoints, users, batches or
 * hosts, only its own jobs wait. Its alarm is its wake-up: one per client, whatever it queued.
 * A job that was running when the object died runs again (every job is idempotent).
 */
export class ClientLanes extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /** What its lanes run (src/jobs/laneWork.ts), made when its first job starts. */
  private laneWork: LaneWork | undefined;
  private readonly running = new Map<Lane, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly budgets = new Map<string, Budget>();
  /** Slots held by requests (`hold`), by hold id. */
  private readonly holds = new Map<string, { lane: Lane; slots: number; until: number }>();
  private clientId = 0;
  /** The shard of the client's rows, as its latest jobs name it. */
  private shard = 1;
  /** The dispatch of the client's events under way, and whether jobs ended since it started. */
  private dispatching: Promise<void> | undefined;
  private dispatchAgain = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS work (
      id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, lane TEXT NOT NULL, key TEXT NOT NULL,
      body TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, not_before INTEGER NOT NULL DEFAULT 0,
      running INTEGER NOT NULL DEFAULT 0)`);
    this.sql.exec("CREATE INDEX IF NOT EXISTS work_waiting ON work (lane, running, id)");
    this.sql.exec("CREATE TABLE IF NOT EXISTS owner (client_id INTEGER NOT NULL)");
    // Jobs that were running when a previous incarnation of this object died run again.
    this.sql.exec("UPDATE work SET running = 0 WHERE running = 1");
    this.clientId = this.sql.exec<{ client_id: number }>("SELECT client_id FROM owner").toArray()[0]?.client_id ?? 0;
  }

  /** Takes the client's jobs into its lanes; they start at once where the client's share allows. */
  async admit(clientId: number, jobs: LaneJob[]): Promise<void> {
    if (this.clientId !== clientId) {
      this.sql.exec("DELETE FROM owner");
      this.sql.exec("INSERT INTO owner (client_id) VALUES (?)", clientId);
      this.clientId = clientId;
    }
    const now = Date.now();
    for (const job of jobs)
      this.sql.exec(
        "INSERT INTO work (queue, lane, key, body, not_before) VALUES (?, ?, ?, ?, ?)",
        job.queue,
        job.lane,
        job.key,
        JSON.stringify(job.message),
        now + (job.delaySeconds ?? 0) * 1000,
      );
    this.pump();
    // The alarm keeps the object at work until its lanes are empty (one set for later comes now).
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || alarm > now) await this.ctx.storage.setAlarm(now);
  }

  /**
   * Takes up to `wanted` of the lane's free slots for work a request does itself (a dry run's
   * marketplace reviews), for at most `forMs`: answers the hold's id and its slots, and, when there are
   * none, when to ask again. The slots count against the client's jobs on the lane, and theirs against it.
   */
  async hold(lane: Lane, wanted: number, forMs: number): Promise<{ id: string; slots: number; retryAfterMs: number }> {
    const now = Date.now();
    this.dropLapsedHolds(now);
    const free = LANE_SHARES[lane].slots - (this.running.get(lane) ?? 0);
    const slots = this.budget(lane, "", now).level > 0 ? Math.max(0, Math.min(wanted, free)) : 0;
    const id = crypto.randomUUID();
    if (slots > 0) {
      this.holds.set(id, { lane, slots, until: now + forMs });
      this.running.set(lane, (this.running.get(lane) ?? 0) + slots);
    }
    return { id, slots, retryAfterMs: slots > 0 ? 0 : 250 };
  }

  /** Gives a hold's slots back, with the outbound time its work took (spent from the lane's budget). */
  async release(id: string, spentMs: number): Promise<void> {
    const hold = this.holds.get(id);
    if (!hold) return;
    this.endHold(id, hold);
    this.spend(hold.lane, "", spentMs);
    this.pump();
  }

  private dropLapsedHolds(now: number): void {
    for (const [id, hold] of this.holds) if (hold.until <= now) this.endHold(id, hold);
  }

  private endHold(id: string, hold: { lane: Lane; slots: number }): void {
    this.holds.delete(id);
    this.running.set(hold.lane, (this.running.get(hold.lane) ?? hold.slots) - hold.slots);
  }

  /** How many of the client's jobs wait or run, per lane (what an operator or a test looks at). */
  async waiting(): Promise<Record<Lane, number>> {
    const counts = Object.fromEntries(LANES.map((lane) => [lane, 0])) as Record<Lane, number>;
    for (const row of this.sql.exec<{ lane: Lane; n: number }>("SELECT lane, count(*) AS n FROM work GROUP BY lane"))
      counts[row.lane] = row.n;
    return counts;
  }

  override async alarm(): Promise<void> {
    const until = Date.now() + ALARM_RUN_MS;
    this.pump();
    while (this.inFlight.size > 0) {
      await Promise.race(this.inFlight);
      if (Date.now() < until) this.pump();
    }
    const next = this.nextStart();
    if (next !== undefined) await this.ctx.storage.setAlarm(next);
  }

  /**
   * Starts every waiting job the client's share has room for, oldest first per lane: one by one, or as
   * one batch on a lane whose jobs run `together` (the publish jobs: two D1 round trips for all of them).
   */
  private pump(): void {
    const now = Date.now();
    this.dropLapsedHolds(now);
    for (const lane of LANES) {
      let free = LANE_SHARES[lane].slots - (this.running.get(lane) ?? 0);
      if (free <= 0) continue;
      // Read row by row, as far as the free slots go: a lane with hundreds waiting and one slot free
      // reads a few rows, not all of them (this runs whenever a job ends).
      const waiting = this.sql.exec<WorkRow>(
        "SELECT id, queue, lane, key, body, attempts FROM work WHERE lane = ? AND running = 0 AND not_before <= ? ORDER BY id LIMIT 500",
        lane,
        now,
      );
      const starting: WorkRow[] = [];
      for (const row of waiting) {
        if (free === 0) break;
        if (this.budget(lane, row.key, now).level <= 0) continue;
        free -= 1;
        starting.push(row);
      }
      const groups = LANE_SHARES[lane].together ? [starting] : starting.map((row) => [row]);
      for (const group of groups) if (group.length > 0) this.start(lane, group);
    }
  }

  private start(lane: Lane, rows: WorkRow[]): void {
    for (const row of rows) this.sql.exec("UPDATE work SET running = 1 WHERE id = ?", row.id);
    this.running.set(lane, (this.running.get(lane) ?? 0) + rows.length);
    const run: Promise<void> = this.run(lane, rows).finally(() => {
      this.running.set(lane, (this.running.get(lane) ?? rows.length) - rows.length);
      this.inFlight.delete(run);
      this.pump();
    });
    this.inFlight.add(run);
  }

  /**
   * Runs jobs as the queue consumer would (one batch of the queue they came from), then ends each, or
   * schedules it again after a failure. A job out of attempts is handed to the dead-letter executor,
   * which ends it.
   */
  private async run(lane: Lane, rows: WorkRow[]): Promise<void> {
    const { attempts: maxAttempts } = LANE_SHARES[lane];
    const retryAfter = new Map<number, number | undefined>();
    const messageOf = (row: WorkRow): Message<JobMessage> => {
      const attempts = row.attempts + 1;
      retryAfter.set(row.id, backoffSeconds(attempts));
      return {
        id: String(row.id),
        timestamp: new Date(),
        body: JSON.parse(row.body) as JobMessage,
        attempts,
        ack: () => retryAfter.set(row.id, undefined),
        retry: (options?: QueueRetryOptions) =>
          retryAfter.set(row.id, options?.delaySeconds ?? backoffSeconds(attempts)),
      };
    };
    const work = await this.work();
    let outboundMs = 0;
    const [dying, living] = [
      rows.filter((row) => row.attempts >= maxAttempts),
      rows.filter((row) => row.attempts < maxAttempts),
    ];
    for (const [queue, batch] of [
      [this.env.DEAD_LETTER_QUEUE, dying],
      [rows[0]?.queue ?? "", living],
    ] as const) {
      if (batch.length === 0) continue;
      try {
        outboundMs += await outboundTimeOf(() => work.execute(queue, batch.map(messageOf)));
      } catch (error) {
        log("error", "lane jobs failed, will retry", {
          lane,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
    // The jobs wrote events, or deliveries ended and made room in their endpoints' queues (on the
    // client's shard, which its jobs name).
    this.shard = work.shardOf(JSON.parse(rows[0]?.body ?? "{}") as JobMessage);
    this.dispatchSoon(work);
    for (const key of new Set(rows.map((row) => row.key))) this.spend(lane, key, outboundMs);
    for (const row of rows) {
      const delay = retryAfter.get(row.id);
      if (delay === undefined) this.sql.exec("DELETE FROM work WHERE id = ?", row.id);
      else
        this.sql.exec(
          "UPDATE work SET running = 0, attempts = ?, not_before = ? WHERE id = ?",
          row.attempts + 1,
          Date.now() + delay * 1000,
          row.id,
        );
    }
  }

  /**
   * Hands the client's new events to delivery now rather than at the next cron: one dispatch at a time
   * for the object, and one more after it when jobs ended meanwhile, not one per job.
   */
  private dispatchSoon(work: LaneWork): void {
    if (this.dispatching) {
      this.dispatchAgain = true;
      return;
    }
    const dispatch: Promise<void> = work
      .dispatch(this.shard, this.clientId)
      .then(() => undefined)
      .catch((error) =>
        log("error", "webhook dispatch failed", { error: error instanceof Error ? error.message : String(error) }),
      )
      .finally(() => {
        this.dispatching = undefined;
        this.inFlight.delete(dispatch);
        if (this.dispatchAgain) {
          this.dispatchAgain = false;
          this.dispatchSoon(work);
        }
      });
    this.dispatching = dispatch;
    // The alarm waits for it as for a job, so the object stays at work until it is done.
    this.inFlight.add(dispatch);
  }

  private async work(): Promise<LaneWork> {
    const { laneWorkOf } = await loadLaneWork();
    this.laneWork ??= laneWorkOf(this.env);
    return this.laneWork;
  }

  /** The key's time left now (a full minute's worth for a key not seen lately). */
  private budget(lane: Lane, key: string, now: number): Budget {
    const { secondsPerMinute } = LANE_SHARES[lane];
    const known = this.budgets.get(`${lane} ${key}`);
    if (!known) return { level: secondsPerMinute, at: now };
    const level = Math.min(secondsPerMinute, known.level + ((now - known.at) / 60_000) * secondsPerMinute);
    return { level, at: now };
  }

  private spend(lane: Lane, key: string, ms: number): void {
    const now = Date.now();
    const { level } = this.budget(lane, key, now);
    this.budgets.set(`${lane} ${key}`, { level: level - ms / 1000, at: now });
  }

  /** When the next waiting job may start: its retry time, or when its key has time again. */
  private nextStart(): number | undefined {
    const now = Date.now();
    let next: number | undefined;
    const rows = this.sql.exec<{ lane: Lane; key: string; not_before: number }>(
      "SELECT lane, key, min(not_before) AS not_before FROM work WHERE running = 0 GROUP BY lane, key",
    );
    for (const row of rows) {
      const { level } = this.budget(row.lane, row.key, now);
      const refilledAt = level > 0 ? now : now + (-level / LANE_SHARES[row.lane].secondsPerMinute) * 60_000 + 1;
      const at = Math.max(row.not_before, refilledAt);
      next = next === undefined ? at : Math.min(next, at);
    }
    return next;
  }
}
