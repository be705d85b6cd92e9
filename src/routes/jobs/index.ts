import { z } from "@hono/zod-openapi";
import { list, ok } from "../../lib/envelope";
import { pagingQuery, pathId, queryInt } from "../../lib/fields";
import { getJob, JOB_KINDS, type JobKind as JobKindName, listJobs, retryJob } from "../../services/publishing";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jobPath, LOCATION_OF_JOB, listEnvelope } from "../openapi";

const tags = ["Jobs"];
const JOB_STATES = ["pending", "processing", "done", "error", "cancelled"] as const;
const JobKind = z.enum(Object.values(JOB_KINDS) as [JobKindName, ...JobKindName[]]);
const JobPortal = z.enum(["portal_a", "portal_b", "website"]);

const Job = z
  .object({
    queueItemId: z.number().int(),
    userId: z.number().int(),
    adId: z.number().int(),
    portal: JobPortal,
    kind: JobKind.openapi({ description: "placement (a new listing), update, unpublish or feature" }),
    feature: z.string().nullable(),
    state: z.enum(JOB_STATES),
    attempts: z.number().int().openapi({ description: "Times the job was started" }),
    lastError: z.string().nullable().openapi({ description: "The reason of a failure, or the error before a retry" }),
    cost: z.number().int().openapi({ description: "Cents charged when it was queued" }),
    refunded: z.boolean(),
    retryOf: z.number().int().nullable().openapi({ description: "The failed job this one retries" }),
    retryable: z.boolean().openapi({ description: "Whether it can be retried: the newest failed job of its listing" }),
    notRetryableReason: z.string().nullable().openapi({ description: "Why not (null when it can)" }),
    created: z.string(),
    updated: z.string(),
  })
  .openapi("Job");

const JobsQuery = pagingQuery(500).extend({
  userId: queryInt().optional(),
  adId: queryInt().optional(),
  portal: JobPortal.optional(),
  state: z.enum(JOB_STATES).optional(),
  kind: JobKind.optional(),
});
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
      const page = await listJobs(serviceContext(c), filter);
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
      headers: LOCATION_OF_JOB,
    }),
    async (c) => {
      const job = await retryJob(serviceContext(c), c.req.valid("param").queueItemId);
      c.header("Location", jobPath(job.queueItemId));
      return c.json(ok(job), 200);
    },
  );
