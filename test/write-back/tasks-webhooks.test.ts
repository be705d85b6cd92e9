import { beforeAll, describe, it } from "vitest";
import { checkGeneratorsCoverDocument, roundTrips, setUp } from "./subjects";

beforeAll(setUp);

describe("what a client reads it can write back", () => {
  it(
    "has a generator for every updatable field of each write, read from the OpenAPI document",
    checkGeneratorsCoverDocument,
  );

  it.each(["tasks", "webhooks", "feeds"])(
    "%s: one field changed in the whole resource read back is the only change",
    roundTrips,
    120_000,
  );
});
