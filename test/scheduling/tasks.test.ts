// The tasks resource: creating, listing, changing and removing scheduled tasks, and what it refuses.
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { call, expectEnvelope, newClient, twoClients } from "../harness/api";
import { type ClientTasks, clientTasks } from "../harness/tasks";

let key: string;
let internalKey: string;
let sellerWithAds: ClientTasks["sellerWithAds"];
let task: ClientTasks["task"];

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
  ({ sellerWithAds, task } = clientTasks(key, internalKey));
});

describe("tasks resource", () => {
  it("creates, lists, changes and removes tasks", async () => {
    const { userId } = await sellerWithAds(0, 0);
    const created = await call("POST", "/tasks/", {
      key,
      body: { userId, portal: "portal_a", time: "09:30", dayOfWeek: ["monday", "friday"], enabled: true },
    });
    expectEnvelope(created, 200);
    expect(created.body.data).toEqual([
      {
        taskId: expect.any(Number),
        userId,
        portal: "portal_a",
        adId: [],
        time: "09:30",
        dayOfWeek: ["monday", "friday"],
        feature: "upcall",
        enabled: true,
      },
    ]);
    const taskId = created.body.data[0]?.taskId;
    await call("POST", "/tasks/", {
      key,
      body: { userId, portal: "portal_b", time: "18:00", enabled: false, feature: "dagtopper" },
    });

    expect((await call("GET", `/tasks/${userId}/`, { key })).body).toMatchObject({ totalItems: 2, totalInSet: 2 });
    expect((await call("GET", `/tasks/?userId=${userId}&itemsPerPage=1&page=2`, { key })).body).toMatchObject({
      totalItems: 2,
      totalInSet: 1,
      page: 2,
    });
    expect(
      (await call("GET", `/tasks/${userId}/portal_b`, { key })).body.data.map((t: { time: string }) => t.time),
    ).toEqual(["18:00"]);
    const one = await call("GET", `/tasks/${userId}/portal_a/${taskId}`, { key });
    expect(one.body.data[0]).toMatchObject({ taskId, runs: [] });
    expectEnvelope(await call("GET", `/tasks/${userId}/portal_a/99999999`, { key }), 404);
    expectEnvelope(await call("GET", `/tasks/${userId}?itemsPerPage=101`, { key }), 400);

    const changed = await call("PUT", "/tasks/", {
      key,
      body: { taskId, userId, time: "10:15", dayOfWeek: null, enabled: false },
    });
    expect(changed.body.data[0]).toMatchObject({ time: "10:15", dayOfWeek: [], enabled: false });
    const removed = await call("DELETE", "/tasks/", { key, body: { taskId, userId, portal: "portal_a" } });
    expect(removed.body.data.map((t: { portal: string }) => t.portal)).toEqual(["portal_b"]);
    expectEnvelope(await call("DELETE", "/tasks/", { key, body: { taskId, userId, portal: "portal_a" } }), 404);
  });

  it.each([
    [{ time: "24:00" }, "time: must be a time hh:mm (00:00-23:59)"],
    [{ time: "9:30" }, "time: must be a time hh:mm (00:00-23:59)"],
    [
      { dayOfWeek: ["funday"] },
      "dayOfWeek[0]: must be one of: monday, tuesday, wednesday, thursday, friday, saturday, sunday",
    ],
    [{ dayOfWeek: ["monday", "monday"] }, "dayOfWeek: each day may appear once"],
    [{ portal: "website" }, "portal: must be one of: portal_a, portal_b"],
    [{ enabled: undefined }, "enabled: is required"],
    [{ feature: "confetti" }, "feature: must be one of: upcall, omhoogplaatsen"],
    [{ adId: [99999999] }, "adId: ad 99999999 not found for user"],
  ])("refuses %j", async (overrides, message) => {
    const { userId } = await sellerWithAds(0, 0);
    const answer = await call("POST", "/tasks/", {
      key,
      body: { userId, portal: "portal_a", time: "09:30", enabled: true, ...overrides },
    });
    expectEnvelope(answer, 400);
    expect(
      answer.body.errors.some((e: string) => e.startsWith(message)),
      JSON.stringify(answer.body.errors),
    ).toBe(true);
  });

  it("keeps tasks to their client", async () => {
    const { userId } = await sellerWithAds(0, 0);
    const { taskId } = await task(userId, { time: "07:00" });
    const { key: otherKey } = await newClient({ partner: true });
    const calls: [string, string, unknown?][] = [
      ["GET", `/tasks/${userId}`],
      ["GET", `/tasks/${userId}/portal_a/${taskId}`],
      ["GET", `/tasks/?userId=${userId}`],
      ["POST", "/tasks/", { userId, portal: "portal_a", time: "08:00", enabled: true }],
      ["PUT", "/tasks/", { taskId, userId, time: "08:00" }],
      ["DELETE", "/tasks/", { taskId, userId, portal: "portal_a" }],
    ];
    for (const [method, path, body] of calls)
      expect((await call(method, path, { key: otherKey, body })).status, `${method} ${path}`).toBe(404);
  });

  it("never answers a 5xx to random bodies", async () => {
    const { userId } = await sellerWithAds(0, 0);
    const fields = fc.constantFrom("userId", "taskId", "portal", "time", "dayOfWeek", "adId", "feature", "enabled");
    const body = fc.oneof(
      fc.jsonValue(),
      fc.dictionary(
        fields,
        fc.oneof(fc.jsonValue(), fc.constant(userId), fc.constant("10:00"), fc.constant(["monday"])),
      ),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("POST", "PUT", "DELETE"), body, async (method, payload) => {
        const answer = await call(method, "/tasks/", { key, body: payload });
        expect(answer.status).toBeLessThan(500);
        expect(typeof answer.body.result).toBe("boolean");
      }),
      { numRuns: 150 },
    );
  });
});
