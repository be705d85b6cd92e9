import { z } from "@hono/zod-openapi";
import { list, ok } from "../../lib/envelope";
import { pathId } from "../../lib/fields";
import { getJob, Job, JobsQuery, listJobs, retryJob } from "../../services/publishing";
import { pageOfEveryShard } from "../acrossShards";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, JOB_HEADERS, listEnvelope, nameJobs } from "../openapi";

const tags = ["Jobs"];
const jobParams = z.object({ queueItemId: pathId("queueItemId") });

export const jobsRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/jobs",
      tags,
      summary: "Queued work (placements, updates, unpublishing, features), newest first",
      description: "A client's own users' jobs; internal clients see every user's (`state=error`: the failed ones).",
      request: { query: JobsQuery },
      response: listEnvelope(Job),
    }),
    async (c) => {
      const startedAt = Date.now();
      const { useCache: _, ...filter } = c.req.valid("query");
      const page = await pageOfEveryShard(c, filter, listJobs, { idOf: (job) => job.queueItemId, descending: true });
      return c.json(list(page, startedAt), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/jobs/{queueItemId}",
      tags,
      summary: "One job: its kind, state, attempts, last error and cost",
      request: { params: jobParams },
      response: envelope(Job),
    }),
    async (c) => c.json(ok(await getJob(serviceContext(c), c.req.valid("param").queueItemId)), 200),
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/jobs/{queueItemId}/retry",
      tags,
      summary: "Queue a failed job again, as a fresh call",
      description: "Answers the new job (`retryOf`, `cost`); only a `retryable` job.",
      request: { params: jobParams },
      response: envelope(Job),
      headers: JOB_HEADERS,
    }),
    async (c) => {
      const job = await retryJob(serviceContext(c), c.req.valid("param").queueItemId);
      nameJobs(c, [job.queueItemId]);
      return c.json(ok(job), 200);
    },
  );
