// The baseline that the production Worker's startup is held against (scripts/startup-time.mjs): a
// one-route Hono Worker, built and profiled the same way in the same run.
import { Hono } from "hono";

const app = new Hono();
app.get("/", (c) => c.text("ok"));

export default app;
