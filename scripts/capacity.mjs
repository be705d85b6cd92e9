// npm run capacity: the capacity model of docs/capacity.md as a program. From the rows, bytes and calls
// per operation measured here (each input names where it is measured) and D1's and Workers' documented
// limits, it prints for 1, 2, 4, 16 and 64 shards what the reference platform needs of each shard:
// publish and read rates against what one shard sustains, storage in steady state, id headroom in years,
// and the cron's queries per invocation.
//   npm run capacity            the tables
//   npm run capacity -- --check  fails when docs/capacity.md does not show the tables as printed now
import { readFileSync } from "node:fs";

/** The reference platform of issue 68 and docs/capacity.md. */
const PLATFORM = {
  ads: 10_000_000,
  dealers: 100_000,
  /** Ads changed (created, updated or removed) a day, as a share of the stock. */
  changingShare: 0.1,
  /** Targets each changed ad is published to: portal_a, portal_b and the website. */
  targets: 3,
  /** The busiest two hours of a day carry this share of its placements (dealers' nightly syncs). */
  peakShareInTwoHours: 0.5,
  /** Requests reading ads, per change (a dealer's system reading back, pages, the website's reads). */
  readsPerChange: 12,
};

/** What a change of one ad writes, by table (assumptions, each stated in docs/capacity.md). */
const PER_CHANGE = {
  /** A placement job per target (queue_items). */
  jobs: PLATFORM.targets,
  /** New or replaced images of a changed ad, and their jobs (ad_images, image_jobs). */
  images: 4,
  imageJobs: 4,
  /** A charge per paid marketplace (portal_a and portal_b; the website is free). */
  ledgerEntries: 2,
  /** `publish.pending` and its outcome per target (the floor of capacity.md's placement). */
  events: 2 * PLATFORM.targets,
  /** One webhook endpoint per client: a delivery per event. */
  deliveries: 2 * PLATFORM.targets,
};

/**
 * Marketplace statistics (src/services/market): a row a day per listing with any activity that day (a day
 * without none is written), kept STATISTICS_RETENTION_DAYS (90); a `statistics.updated` event each time a
 * pull finds that day's numbers moved (a pull that finds them unchanged writes nothing).
 */
const STATISTICS = {
  /** Listings with statistics: each ad on portal_a and portal_b (the website has none). */
  listings: PLATFORM.ads * 2,
  /** Share of listings with any activity on a day (assumed, derived-for-D1: no marketplace data here). */
  activeShare: 0.3,
  /** Pulls a day that find an active listing's numbers moved (assumed, derived-for-D1). */
  changesPerActiveDay: 3,
  retentionDays: 90,
  /** A row of 8 integers and a date, with its primary key and date index (estimated like a ledger entry's). */
  bytesPerRow: 120,
};

/** Bytes a row takes with its indexes (docs/capacity.md, "What one database holds"). */
const BYTES = {
  /** An ad in all, with attributes, publications, images' metadata and details: estimated from the measured 850. */
  ad: 5_800,
  event: 320,
  delivery: 200,
  job: 250,
  /** A ledger entry and its index: estimated like a job's row, with a shorter row. */
  ledgerEntry: 180,
};

/** How long each growing table stays in D1 before the archive (src/services/archive: HOT_WINDOW_DAYS, EVENT_RETENTION_MS). */
const HOT_DAYS = { events: 30, deliveries: 30, jobs: 90, ledger: 90, imageJobs: 90 };

/** Measured here (docs/benchmark.md): one shard's rates where the Worker's thread is not the limit. */
const MEASURED = {
  /** Placements a second on one shard, jobs in their clients' lanes (`npm run bench -- --shards`). */
  publishPerShard: 218,
  /**
   * D1 time per read request: a dealer's page reads 65 rows in two round trips; SQLite on this machine
   * answers such a round trip in about 0.5 ms, so a database serves about 1,000 such pages a second
   * (D1 runs a database's queries one at a time).
   */
  readsPerShard: 1_000,
  /**
   * D1 calls a shard's minute makes (src/cron/minute.ts): 18 to 34 measured before the top-up of id blocks
   * (up to 3) and the archive's four parts (2 each) were added.
   */
  cronQueriesPerShard: 45,
};

/**
 * The archive's parts of a shard's minute (src/cron/minute.ts): rows each may take out of D1 a minute.
 * Events and deliveries share one part (archiveOldLogs takes up to its limit of each).
 */
const ARCHIVE_PER_MINUTE = { events: 5_000, deliveries: 5_000, jobs: 2_000, ledger: 500, imageJobs: 2_000 };

/** A group move's step (src/db/moves/budget.ts): its copy and catch-up queries, and what runs around them. */
const MOVE_STEP = { queries: 800, around: 30 };

/** Documented limits (developers.cloudflare.com: D1 limits, Workers limits). */
const LIMITS = {
  databaseBytes: 10e9,
  /** A shard's cron invocation (its ShardCron object's alarm) makes `cronQueriesPerShard` of these. */
  queriesPerInvocation: 1_000,
};

/** Ids: blocks of 4,096 a group leases ahead once its latest is half used (src/db/ids.ts), 64-bit since 1.10.0. */
const IDS = { bits: 53, blockUse: 0.5 };

const SHARD_COUNTS = [1, 2, 4, 16, 64];
const DAY = 86_400;

function model() {
  const changes = PLATFORM.ads * PLATFORM.changingShare;
  const perDay = Object.fromEntries(Object.entries(PER_CHANGE).map(([table, n]) => [table, n * changes]));
  // The statistics' rows and events, which grow with the listings, not with the changes.
  const activeListings = STATISTICS.listings * STATISTICS.activeShare;
  perDay.events += activeListings * STATISTICS.changesPerActiveDay;
  perDay.deliveries += activeListings * STATISTICS.changesPerActiveDay;
  const placementsPerSecond = {
    average: perDay.jobs / DAY,
    peak: (perDay.jobs * PLATFORM.peakShareInTwoHours) / (2 * 3600),
  };
  const readsPerSecond = (changes * PLATFORM.readsPerChange) / DAY;
  const storage = {
    ads: PLATFORM.ads * BYTES.ad,
    events: perDay.events * HOT_DAYS.events * BYTES.event,
    deliveries: perDay.deliveries * HOT_DAYS.deliveries * BYTES.delivery,
    jobs: perDay.jobs * HOT_DAYS.jobs * BYTES.job,
    ledger: perDay.ledgerEntries * HOT_DAYS.ledger * BYTES.ledgerEntry,
    // The jobs of the images an ad shows stay with them (in the ad's bytes); the others for their window.
    imageJobs: perDay.imageJobs * HOT_DAYS.imageJobs * BYTES.job,
    statistics: activeListings * STATISTICS.retentionDays * STATISTICS.bytesPerRow,
  };
  const steadyBytes = Object.values(storage).reduce((sum, bytes) => sum + bytes, 0);
  // The busiest id space: each table's ids are platform-wide (blocks), but events' and deliveries' are a shard's.
  const idYears = (bits, perDayOfTable) => (2 ** bits * IDS.blockUse) / (perDayOfTable * 365);
  const busiestBlockTable = Math.max(perDay.images, perDay.imageJobs, perDay.jobs, perDay.ledgerEntries);
  // How many times over the archive's minutes take what becomes due a day, by its slowest part.
  const due = {
    events: perDay.events,
    deliveries: perDay.deliveries,
    jobs: perDay.jobs,
    ledger: perDay.ledgerEntries,
    imageJobs: perDay.imageJobs,
  };
  const archivePace = (shards) =>
    Math.min(...Object.entries(due).map(([part, rows]) => (ARCHIVE_PER_MINUTE[part] * 1440) / (rows / shards)));
  return SHARD_COUNTS.map((shards) => ({
    shards,
    peakPlacements: placementsPerSecond.peak / shards,
    publishHeadroom: MEASURED.publishPerShard / (placementsPerSecond.peak / shards),
    readsPerShard: readsPerSecond / shards,
    readHeadroom: MEASURED.readsPerShard / (readsPerSecond / shards),
    steadyGb: steadyBytes / shards / 1e9,
    idYears32: idYears(31, busiestBlockTable),
    idYears64: Math.min(idYears(IDS.bits, busiestBlockTable), idYears(IDS.bits, perDay.events / shards)),
    archivePace: archivePace(shards),
    cronQueries: MEASURED.cronQueriesPerShard,
  }));
}

const fixed = (n, digits = 1) =>
  n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const years = (n) => (n >= 1e6 ? `${fixed(n / 1e6, 0)} million` : fixed(n, 1));

export function tables() {
  const rows = model();
  const lines = [
    "| shards | peak placements/s per shard | × headroom (218/s a shard) | reads/s per shard | × headroom | D1 GB per shard, steady state | of 10 GB | id headroom in years, 32-bit / 64-bit | archive: × the rows due a day | D1 queries of a busy minute: a shard's cron / a move's step |",
    "|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const r of rows)
    lines.push(
      `| ${r.shards} | ${fixed(r.peakPlacements, 0)} | ${fixed(r.publishHeadroom, 2)} | ${fixed(r.readsPerShard, 0)} | ${fixed(r.readHeadroom, 1)} | ${fixed(r.steadyGb)}${r.archivePace < 1 ? " (not reached: the archive falls behind)" : ""} | ${fixed((r.steadyGb * 1e9) / LIMITS.databaseBytes, 2)} | ${fixed(r.idYears32, 2)} / ${years(r.idYears64)} | ${fixed(r.archivePace, 2)} | ${r.cronQueries} / ${MOVE_STEP.queries + MOVE_STEP.around} of ${fixed(LIMITS.queriesPerInvocation, 0)} |`,
    );
  lines.push("", "| input | value | where it comes from |", "|---|---|---|");
  for (const [name, value, source] of INPUTS) lines.push(`| ${name} | ${value} | ${source} |`);
  return lines.join("\n");
}

/** Every input of the model, with where it comes from: measured here (and where), derived for D1, or assumed. */
const INPUTS = [
  ["ads; dealers", `${fixed(PLATFORM.ads, 0)}; ${fixed(PLATFORM.dealers, 0)}`, "assumed: the reference platform"],
  ["changes a day", `${PLATFORM.changingShare * 100}% of the ads`, "assumed"],
  ["targets a change goes to", PLATFORM.targets, "assumed: portal_a, portal_b, website"],
  [
    "writes of a change",
    "3 jobs, 4 images and their jobs, 2 charges, 6 events, 6 deliveries",
    "measured here: test/api/write-cost.test.ts (rows a placement writes)",
  ],
  ["an ad's bytes", fixed(BYTES.ad, 0), "derived for D1 from 850 measured here (a bare ad: docs/capacity.md)"],
  [
    "a log row's bytes",
    "events 320, deliveries 200, jobs 250, ledger 180, statistics 120",
    "derived for D1 (row and index sizes: docs/capacity.md)",
  ],
  [
    "statistics: active listings a day; changed pulls",
    `${STATISTICS.activeShare * 100}%; ${STATISTICS.changesPerActiveDay}`,
    "assumed (no marketplace data here)",
  ],
  [
    "placements a second a shard",
    MEASURED.publishPerShard,
    "measured here: npm run bench -- --shards (the local Worker's thread, not D1's ceiling)",
  ],
  [
    "reads a second a shard",
    fixed(MEASURED.readsPerShard, 0),
    "derived for D1: 2 round trips of about 0.5 ms measured here, D1 one query at a time",
  ],
  [
    "a shard's cron queries",
    MEASURED.cronQueriesPerShard,
    "measured here: the minute's summary (src/cron/minute.ts), parts added since counted",
  ],
  [
    "archive rows a shard-minute",
    "events 5,000, deliveries 5,000, jobs 2,000, ledger 500, image jobs 2,000",
    "the cron's limits (src/cron/minute.ts)",
  ],
  [
    "a move step's queries",
    `${MOVE_STEP.queries} + about ${MOVE_STEP.around}`,
    "src/db/moves/budget.ts; what runs around it counted here (test/shards/move-budget.test.ts)",
  ],
  ["queries an invocation may make; a database's size", "1,000; 10 GB", "documented (D1 limits)"],
];

const BEGIN = "<!-- npm run capacity: begin -->";
const END = "<!-- npm run capacity: end -->";

if (import.meta.url === `file://${process.argv[1]}`) {
  const printed = tables();
  if (process.argv.includes("--check")) {
    const page = readFileSync(new URL("../docs/capacity.md", import.meta.url), "utf8");
    const shown = page.slice(page.indexOf(BEGIN) + BEGIN.length, page.indexOf(END)).trim();
    if (!page.includes(BEGIN) || shown !== printed) {
      console.error(`docs/capacity.md does not show what npm run capacity prints between its markers:\n\n${printed}`);
      process.exit(1);
    }
  } else console.log(printed);
}
