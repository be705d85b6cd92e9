// The marketplace simulator's Worker: `/<portal>/…` is served by that portal's Durable Object.
import type { SimulatorEnv } from "./env";
import { isPortal } from "./env";

export { MarketplaceSimulator } from "./marketplace";

export default {
  fetch(request, env) {
    const portal = new URL(request.url).pathname.split("/")[1];
    if (!isPortal(portal)) return Response.json({ error: "no such marketplace" }, { status: 404 });
    return env.MARKETPLACE.get(env.MARKETPLACE.idFromName(portal)).fetch(request);
  },
} satisfies ExportedHandler<SimulatorEnv>;
