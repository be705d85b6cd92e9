// What the hot writes cost in D1's expensive unit, rows written (an index entry counts as one), each held
// to a bound so that a change that adds writes fails here (as test/adViews/list-cost.test.ts holds
// reads). The bounds are today's measurements; docs/capacity.md has the table and what it costs.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { ads } from "../../src/db/schema";
import type { Env } from "../../src/env";
import { amsterdamDay, amsterdamToUtc } from "../../src/lib/time";
import { deliverWebhooks, dispatchEvents } from "../../src/services/events";
import { runImageJob } from "../../src/services/images";
import { queueFeature, queueJobs } from "../../src/services/publishing";
import { runDueTasks } from "../../src/services/scheduling";
import { jobContext } from "../../src/services/shared";
import type { WebhookMessage } from "../../src/services/shared/jobMessages";
import { eventsOf, receiver, registerWebhook } from "../fixtures/hooks";
import { call, d1RowsOf, defined, expectEnvelope, twoClients } from "../harness/api";
import { meteredBindings } from "../harness/d1";
import { createAd, PAID_CATEGORY, SOFA_CATEGORY } from "../harness/data";
import { placements, runPublishJob, withoutMessages } from "../harness/jobs";
import { connectedSeller, settledPublication } from "../harness/marketplace";

/**
 * Rows written per hot write today, by a partner client sending an Idempotency-Key (the key's record is
 * part of a write's cost). Issue "Half the rows written" brings these down toward their floor.
 */
const ROWS_WRITTEN = {
  "POST /ads/ (one attribute)": 26,
  "PUT /ads/ (title, price, attributes)": 13,
  "PATCH /ads/ (status)": 24,
  "DELETE /ads/{adId}": 15,
  "POST /publish/ (one placement)": 21,
  "its publish job": 17,
  "POST /features/": 15,
  "its feature job": 14,
  "an image job": 18,
  "a due task (one ad)": 25,
  "a webhook delivery": 10,
};
type HotWrite = keyof typeof ROWS_WRITTEN;

let key: string;
let internalKey: string;
const measured = new Map<HotWrite, number>();

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const condition = (value: string) => ({ portal: "portal_a", values: [{ key: "condition", value }] });

/** What a job's run wrote: the work `run` does with metered bindings. */
async function jobWrites(run: (bindings: Env) => Promise<unknown>) {
  const { env: bindings, usage } = meteredBindings();
  await run(bindings);
  return usage.rowsWritten;
}

describe("rows written per hot write", () => {
  it("an ad's create, update, status change and delete", async () => {
    const userId = await connectedSeller(key, internalKey);
    const body = (externalAdId: number) => ({
      userId,
      externalAdId,
      categoryId: SOFA_CATEGORY,
      title: "Eiken eettafel",
      description: "Massief eiken eettafel, 220 cm, met zes stoelen.",
      price: { model: "fixed", price: 45_000 },
      attributes: [condition("gebruikt")],
    });
    // A fresh isolate reads the catalogue on its first write: that read is not the ad's.
    await call("POST", "/ads/", { key, body: body(1) });
    const created = await call("POST", "/ads/", { key, body: body(2) });
    expectEnvelope(created, 200);
    const { adId } = created.body.data;
    measured.set("POST /ads/ (one attribute)", d1RowsOf(created).written);
    const updated = await call("PUT", "/ads/", {
      key,
      body: {
        adId,
        title: "Eiken eettafel 220",
        price: { model: "fixed", price: 42_500 },
        attributes: [condition("zo goed als nieuw")],
      },
    });
    expectEnvelope(updated, 200);
    measured.set("PUT /ads/ (title, price, attributes)", d1RowsOf(updated).written);
    const patched = await call("PATCH", "/ads/", { key, body: { adId, status: "archive" } });
    expectEnvelope(patched, 200);
    measured.set("PATCH /ads/ (status)", d1RowsOf(patched).written);
    const deleted = await call("DELETE", `/ads/${adId}`, { key });
    expectEnvelope(deleted, 200);
    measured.set("DELETE /ads/{adId}", d1RowsOf(deleted).written);
  });

  it("a placement, its job, a feature and its job, and an image job", async () => {
    const userId = await connectedSeller(key, internalKey, 1_000_000);
    const placed = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer voor de kosten" });
    const request = await call("POST", "/publish/", { key, body: { userId, adId: placed.adId, portal: "portal_a" } });
    expectEnvelope(request, 200);
    measured.set("POST /publish/ (one placement)", d1RowsOf(request).written);
    expect((await settledPublication(key, userId, placed.adId))?.active).toBe(true);

    // A job held (no message) and run by the test, metered.
    const held = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer voor de job" });
    const [job] = await queueJobs(jobContext(withoutMessages()), placements(userId, [held.adId]));
    measured.set("its publish job", await jobWrites((bindings) => runPublishJob(bindings, defined(job?.jobId))));

    const feature = await call("POST", "/features/", {
      key,
      body: { adId: placed.adId, portal: "portal_a", feature: "omhoogplaatsen" },
    });
    expectEnvelope(feature, 200);
    measured.set("POST /features/", d1RowsOf(feature).written);
    const ad = defined(await getDb(env.DB).select().from(ads).where(eq(ads.id, held.adId)).get());
    const { outcome } = await queueFeature(jobContext(withoutMessages()), {
      ad,
      portal: "portal_a",
      feature: "omhoogplaatsen",
    });
    measured.set(
      "its feature job",
      await jobWrites((bindings) => runPublishJob(bindings, defined(outcome.queueItemId))),
    );

    const image = await env.DB.prepare(
      "INSERT INTO image_jobs (ad_id, user_id, source_url) VALUES (?, ?, ?) RETURNING id",
    )
      .bind(held.adId, userId, "http://images.test/red.png")
      .first<{ id: number }>();
    measured.set(
      "an image job",
      await jobWrites((bindings) => runImageJob(jobContext(bindings), { jobId: defined(image?.id) })),
    );
  });

  it("a due task bumping one ad, and a webhook delivery", async () => {
    const userId = await connectedSeller(key, internalKey, 1_000_000);
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer met taak" });
    await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    expect((await settledPublication(key, userId, ad.adId))?.active).toBe(true);
    const task = await call("POST", "/tasks/", {
      key,
      body: { userId, portal: "portal_a", enabled: true, time: "10:00", adId: [ad.adId] },
    });
    expectEnvelope(task, 200);
    // Tomorrow at 10:00 in Amsterdam: the task is due then, once.
    const due = amsterdamToUtc(amsterdamDay(new Date(Date.now() + 86_400_000)).date, 10, 0);
    measured.set(
      "a due task (one ad)",
      await jobWrites(async (bindings) => {
        const runs = await runDueTasks({ ...jobContext(withoutMessages(bindings)), now: due }, { limit: 50 });
        expect(runs).toEqual([expect.objectContaining({ queued: 1 })]);
      }),
    );

    // A delivery as the dispatcher hands it over: the message it would queue, delivered metered.
    const { clientId } = (await call("GET", "/client", { key })).body.data;
    const { url } = receiver("ok");
    await registerWebhook(key, url);
    await eventsOf(clientId, 1);
    const handed: WebhookMessage[] = [];
    const capture = {
      send: async (m: WebhookMessage) => void handed.push(m),
      sendBatch: async (ms: { body: WebhookMessage }[]) => void handed.push(...ms.map((m) => m.body)),
    };
    await dispatchEvents(jobContext({ ...env, WEBHOOKS: capture, WEBHOOKS_SLOW: capture } as unknown as Env), {
      clientId,
    });
    const [message] = handed;
    measured.set(
      "a webhook delivery",
      await jobWrites(async (bindings) => {
        const [delivered] = await deliverWebhooks(jobContext(bindings), { messages: [defined(message)], lane: "fast" });
        expect(delivered?.status).toBe("fulfilled");
      }),
    );
  });

  it("stay within today's rows written", () => {
    const over = Object.entries(ROWS_WRITTEN).flatMap(([write, bound]) => {
      const rows = measured.get(write as HotWrite);
      return rows !== undefined && rows <= bound ? [] : [`${write}: ${rows} rows written, bound ${bound}`];
    });
    expect(over).toEqual([]);
  });
});
