import { describe, expect, it } from "vitest";
import { eventsOf, receivedBy, receiver, registerWebhook } from "../fixtures/hooks";
import { call, eventually, expectEnvelope, newClient } from "../harness/api";
import { activate, createAd, createUser } from "../harness/data";
import { publicationTime } from "../harness/marketplace";
import { expectWithinNeighbourBound, sleep, timed } from "./bound";

/**
 * Many clients, each inside its own shares: sixteen of them, each with slow endpoints replaying, images
 * from a trickling host and a publish batch, beside client B's webhook, image and publication. The bound
 * is per client, not per client count: B waits for its own turn, never behind everyone's jobs.
 */
const CLIENTS = 16;

/** One client's load, each part inside its share of its lane (docs/operating.md, shared lanes). */
const LOAD = { slowEndpoints: 4, eventsEach: 24, imageAds: 16, imagesPerAd: 6, publishBatch: 60 };

type Client = Awaited<ReturnType<typeof newClient>>;

/** B's webhook: a test message of B's endpoint, until it reaches B's receiver. */
async function webhookTime(b: Client, webhookId: number, receiverName: string) {
  const before = (await receivedBy(receiverName)).length;
  return timed(async () => {
    expectEnvelope(await call("POST", `/webhooks/${webhookId}/test`, { key: b.key }), 200);
    await eventually(async () => ((await receivedBy(receiverName)).length > before ? true : undefined), "B's webhook");
  });
}

/** B's image: one image from a host that answers at once, until its job is done. */
async function imageTime(b: Client, userId: number) {
  const { adId } = await createAd(b.key, userId);
  return timed(async () => {
    expectEnvelope(
      await call("PUT", `/images/${adId}`, {
        key: b.key,
        body: { images: [{ image: { url: "http://images.test/red.png" } }] },
      }),
      200,
    );
    await eventually(async () => {
      const jobs = (await call("GET", `/imagestatus/${userId}/${adId}`, { key: b.key })).body.data as {
        done: boolean;
        result: boolean;
      }[];
      return jobs.length > 0 && jobs.every((job) => job.done && job.result) ? true : undefined;
    }, "B's image");
  });
}

/** A client's ads, created ahead of its load (so the load itself is the work it queues, not set-up). */
async function loadedClient() {
  const client = await newClient({ partner: true });
  const seller = await createUser(client.key);
  await activate(client.key, seller);
  const ads: number[] = [];
  for (let i = 0; i < LOAD.publishBatch; i += 1) ads.push((await createAd(client.key, seller.userId)).adId);
  const endpoints: { webhookId: number; name: string }[] = [];
  for (let i = 0; i < LOAD.slowEndpoints; i += 1) {
    const slow = receiver("slow");
    endpoints.push({ webhookId: (await registerWebhook(client.key, slow.url)).webhookId, name: slow.name });
  }
  await eventsOf(client.client.id, LOAD.eventsEach);
  return { client, userId: seller.userId, ads, endpoints };
}

/** A client's pace: the default rate of a key, 3 requests a second. */
const REQUEST_GAP_MS = 1_000 / 3;

/**
 * A client's load, sent at its pace: its endpoints replay its events, its images trickle, its batch
 * publishes.
 */
async function startLoad({ client, userId, ads, endpoints }: Awaited<ReturnType<typeof loadedClient>>) {
  const { key } = client;
  const paced = async (answer: Promise<Awaited<ReturnType<typeof call>>>) => {
    expectEnvelope(await answer, 200);
    await sleep(REQUEST_GAP_MS);
  };
  // The replay starts a dispatch, which hands the client's events to each of its endpoints.
  const first = endpoints[0]?.webhookId;
  await paced(call("POST", `/webhooks/${first}/replay`, { key, body: { after: 0 } }));
  const trickling = { image: { url: "http://images.test/trickle.png" } };
  for (const adId of ads.slice(0, LOAD.imageAds))
    await paced(call("PUT", `/images/${adId}`, { key, body: { images: Array(LOAD.imagesPerAd).fill(trickling) } }));
  await paced(call("POST", "/publish/batch", { key, body: { userId, adId: ads, portal: "website" } }));
}

describe("sixteen clients, each inside its shares", () => {
  it("delay a seventeenth client's webhook, image and publication by at most its bound", async () => {
    const b = await newClient({ partner: true });
    const bSeller = await createUser(b.key);
    await activate(b.key, bSeller);
    const quick = receiver("ok");
    const bEndpoint = (await registerWebhook(b.key, quick.url)).webhookId;
    const bTimes = async () => {
      const [webhook, image, publication] = await Promise.all([
        webhookTime(b, bEndpoint, quick.name),
        imageTime(b, bSeller.userId),
        publicationTime(b.key, bSeller.userId),
      ]);
      return { webhook, image, publication };
    };
    await bTimes(); // warms each pipeline up; B's times alone are the second run's
    const alone = await bTimes();

    const clients = await Promise.all(Array.from({ length: CLIENTS }, loadedClient));
    // Each client sends its load at its pace (some 6 s); B's work starts while it arrives.
    const loads = Promise.all(clients.map(startLoad));
    await sleep(1_500);
    const beside = await bTimes();
    await loads;

    expectWithinNeighbourBound(`B's webhook beside ${CLIENTS} clients`, alone.webhook, beside.webhook);
    expectWithinNeighbourBound(`B's image beside ${CLIENTS} clients`, alone.image, beside.image);
    expectWithinNeighbourBound(`B's publication beside ${CLIENTS} clients`, alone.publication, beside.publication);
    // The load was still there when B's work was done: the clients' slow endpoints had events to go.
    const slowEndpoints = clients.flatMap(({ endpoints }) => endpoints);
    const received = await Promise.all(slowEndpoints.map(async ({ name }) => (await receivedBy(name)).length));
    expect(received.reduce((sum, n) => sum + n, 0)).toBeLessThan(slowEndpoints.length * LOAD.eventsEach);
  }, 900_000);
});
