// The production Worker with its body (src/worker.ts) loaded at once: what an isolate's first invocation
// pays on top of its startup (scripts/startup/profile.mjs, npm run bench -- --startup).
import "../../src/worker";

export * from "../../src/index";
export { default } from "../../src/index";
