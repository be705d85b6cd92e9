import { beforeAll, describe, expect, it } from "vitest";
import { call, defined, expectEnvelope, expectError, newClient } from "../harness/api";
import { userBody } from "../harness/data";

let key: string;

beforeAll(async () => {
  key = (await newClient({ partner: true })).key;
});

describe("D1 sessions and bookmarks", () => {
  it("answers a write with its bookmark, and a read that sends it back sees the write", async () => {
    const created = await call("POST", "/users/", { key, body: userBody({ lastName: "Bladwijzer" }) });
    expectEnvelope(created, 200);
    const bookmark = defined(created.headers.get("x-d1-bookmark"), "the write's bookmark");
    expect(bookmark.length).toBeGreaterThan(0);

    const read = await call("GET", `/users/${created.body.data.userId}`, {
      key,
      headers: { "x-d1-bookmark": bookmark },
    });
    expectEnvelope(read, 200);
    expect(read.body.data[0]).toMatchObject({ userId: created.body.data.userId, lastName: "Bladwijzer" });
    // The read's own bookmark is at least as far along as the one it was given.
    expect(defined(read.headers.get("x-d1-bookmark")) >= bookmark).toBe(true);
  });

  it("refuses a bookmark that is not one as the document states it (lower-case hex) with 400 naming the header", async () => {
    for (const bookmark of ["not-a-bookmark", `ABCDEF01-00000000-00000000-${"0".repeat(32)}`]) {
      const read = await call("GET", "/users/", { key, headers: { "x-d1-bookmark": bookmark } });
      expectError(read, "validation_failed");
      expect(read.body.errors, bookmark).toEqual(["x-d1-bookmark: not a D1 bookmark"]);
    }
    // Empty: no bookmark yet, as a client may send it before its first answer.
    expectEnvelope(await call("GET", "/users/", { key, headers: { "x-d1-bookmark": "" } }), 200);
  });

  it("serves a read without a bookmark too, and names its session's bookmark", async () => {
    const read = await call("GET", "/users/", { key });
    expectEnvelope(read, 200);
    expect(read.headers.get("x-d1-bookmark")).toBeTruthy();
  });
});
