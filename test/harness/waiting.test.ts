// The suite waits for queue work by the test's own time, never by a count of tries sized for a quiet
// machine (test/harness/timeouts.ts).
import { describe, expect, it } from "vitest";
import { eventually } from "./api";

describe("eventually", () => {
  it("answers the check's first value", async () => {
    let calls = 0;
    expect(await eventually(async () => (++calls === 3 ? "ready" : undefined), "the third call")).toBe("ready");
    expect(calls).toBe(3);
  });

  it("waits as long as the test has time, then names what it waited for", { timeout: 4_000 }, async () => {
    const started = Date.now();
    await expect(eventually(async () => undefined, "what never comes")).rejects.toThrow(
      "timed out waiting for what never comes",
    );
    // The test's 4 s less the second it keeps to fail in: however fast the machine polls.
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_500);
  });
});
