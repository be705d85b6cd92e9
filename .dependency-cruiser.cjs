// The import rules of src/, run by `npm test` (npm run check:imports). Every import runs downward:
//   index.ts → worker.ts → app.ts → routes → middleware → services → durable, portals → db → env.ts → lib
// and inside services each domain folder imports only folders of a lower rank below (siblings of one
// rank never import each other). The ad views (adViews) are the read model: the top rank, so no domain
// imports them. Who the caller is, is read only in services/shared/access.ts: the compiler enforces it
// (Caller's fields have a key no other module can name). The marketplace simulator (simulator/) is a
// Worker of its own that shares no code with the API either way. Type-only imports count like any other
// (tsPreCompilationDeps), and no module of the API or the simulator imports itself back.

/** Domain folders by rank, lowest first. */
const DOMAIN_RANKS = [
  ["shared"],
  ["catalogue", "events"],
  ["wallet"],
  ["ads"],
  ["images"],
  ["publishing"],
  ["accounts", "archive", "market", "operations", "scheduling", "syncs"],
  // Feeds fetch a stock and hand it to a sync.
  ["feeds"],
  ["adViews"],
];

const folders = (names) => `^src/services/(${names.join("|")})/`;

const domainRules = DOMAIN_RANKS.flatMap((rank, at) =>
  rank.map((folder) => {
    const higher = DOMAIN_RANKS.slice(at)
      .flat()
      .filter((name) => name !== folder);
    return {
      name: `domain-downward-${folder}`,
      comment: `services/${folder} imports only domain folders ranked below it`,
      severity: "error",
      from: { path: `^src/services/${folder}/` },
      to: { path: folders(higher) },
    };
  }),
);

/** The HTTP layer: Hono (but its HTML escaping helpers), the routes, the middleware and the app. */
const HTTP = "^(src/(routes|middleware)/|src/app\\.ts$|node_modules/hono/dist/(?!.*(/html|/utils/html)))";

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "no module imports itself back through others",
      severity: "error",
      from: { path: "^(src|simulator)/" },
      to: { circular: true },
    },
    ...domainRules,
    {
      name: "every-domain-ranked",
      comment: "a new domain folder gets its rank in DOMAIN_RANKS",
      severity: "error",
      from: { path: "^src/services/", pathNot: folders(DOMAIN_RANKS.flat()) },
      to: {},
    },
    {
      name: "lib-and-db-are-the-bottom",
      comment: "lib and db import no domain, entry layer or infrastructure binding",
      severity: "error",
      from: { path: "^src/(lib|db)/" },
      to: { path: "^src/(services|routes|middleware|jobs|cron|durable|portals|app\\.ts|worker\\.ts)" },
    },
    {
      name: "env-is-the-floor",
      comment:
        "env.ts (the bindings and a request's variables) imports nothing of src but lib; db and all above import it",
      severity: "error",
      from: { path: "^src/env\\.ts$" },
      to: { path: "^src/", pathNot: "^src/(lib/|worker-configuration\\.d\\.ts$)" },
    },
    {
      name: "infrastructure-below-domains",
      comment: "Durable Objects and the marketplace gateway import no domain",
      severity: "error",
      from: { path: "^src/(durable|portals)/" },
      to: { path: "^src/(services|routes|middleware|jobs|cron)/" },
    },
    {
      name: "simulator-is-another-worker",
      comment: "the API and the marketplace simulator share no code: the API reaches it over HTTP only",
      severity: "error",
      from: { path: "^(src|simulator)/" },
      to: { path: "^(src|simulator)/", pathNot: "^$1/" },
    },
    {
      name: "http-layer-only-from-routes-and-middleware",
      comment: "only routes, middleware and the app (and the worker that serves it) use the HTTP layer",
      severity: "error",
      from: {
        path: "^src/",
        pathNot: "^src/(routes|middleware)/|^src/(app|worker|index)\\.ts$",
      },
      to: { path: HTTP },
    },
    {
      name: "app-is-above-routes-and-middleware",
      comment: "the app assembles routes and middleware; they never import it back, types included",
      severity: "error",
      from: { path: "^src/(routes|middleware|services|jobs|cron|durable|portals|lib|db)/" },
      to: { path: "^src/(app|worker|index)\\.ts$" },
    },
    {
      name: "entry-layers-reach-a-domain-through-its-index",
      comment: "routes, middleware, jobs and cron import a domain's index, not its files",
      severity: "error",
      from: { path: "^src/(routes|middleware|jobs|cron)/" },
      to: { path: "^src/services/[^/]+/.+", pathNot: "^src/services/[^/]+/index\\.ts$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    exclude: { path: "\\.d\\.ts$" },
  },
};
