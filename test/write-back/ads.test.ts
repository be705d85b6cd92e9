import { beforeAll, describe, it } from "vitest";
import { roundTrips, setUp } from "./subjects";

beforeAll(setUp);

describe("what a client reads it can write back", () => {
  it.each(["ads", "adSettings", "manufacturers"])(
    "%s: one field changed in the whole resource read back is the only change",
    roundTrips,
    120_000,
  );
});
