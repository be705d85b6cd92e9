import { beforeAll, describe, expect, it } from "vitest";
import { call, expectEnvelope, newClient } from "../harness/api";
import { createAd, createUser } from "../harness/data";
import { roundTrips, setUp } from "./subjects";

beforeAll(setUp);

describe("what a client reads it can write back", () => {
  it.each(["users", "contacts", "folders", "userSettings", "userAdSettings"])(
    "%s: one field changed in the whole resource read back is the only change",
    roundTrips,
    120_000,
  );
});

describe("what a fresh resource reads it can write back", () => {
  it("a user without ad settings, and an ad without settings: the empty list read is taken back as it is", async () => {
    const { key } = await newClient({ partner: true });
    const { userId } = await createUser(key);
    const read = await call("GET", `/user/adsettings/${userId}`, { key });
    expect(read.body.data).toEqual({ userId, settings: [] });
    const written = await call("POST", "/user/adsettings/", { key, body: read.body.data });
    expectEnvelope(written, 200);
    expect(written.body.data).toEqual(read.body.data);
    const { adId } = await createAd(key, userId, { settings: [] });
    const adSettings = await call("GET", `/adsettings/${adId}`, { key });
    const rewritten = await call("POST", "/adsettings/", { key, body: adSettings.body.data });
    expectEnvelope(rewritten, 200);
    expect(rewritten.body.data).toEqual(adSettings.body.data);
  });
});
