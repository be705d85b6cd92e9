/**
 * Metrics, written to Workers Analytics Engine (binding METRICS). Each event is one data point:
 * `index1` and `blob1` are the event name, `blob2…` its labels and `double1…` its values, in the order
 * of DATA_POINTS (the README lists them with the SQL API queries that read them). Without the binding
 * (local development) nothing is written.
 */
export type MetricEvent =
  | {
      event: "request";
      route: string;
      method: string;
      status: number;
      durationMs: number;
      rowsRead: number;
      rowsWritten: number;
    }
  | {
      event: "job";
      kind: string;
      portal: string;
      result: "done" | "error" | "retry" | "cancelled";
      durationMs: number;
      attempts: number;
    }
  | { event: "queue_lag"; kind: string; lagMs: number }
  | { event: "retry"; kind: string; attempts: number }
  | { event: "dead_letter"; kind: string }
  | { event: "wallet"; entry: "charge" | "refund"; portal: string; cents: number }
  | {
      event: "webhook_delivery";
      status: number;
      result: "delivered" | "retry" | "failed" | "slow_lane";
      durationMs: number;
    };

type EventName = MetricEvent["event"];
type Of<E extends EventName> = Extract<MetricEvent, { event: E }>;

/** Per event: its labels (blob2…) and values (double1…), in order. */
export const DATA_POINTS: { [E in EventName]: { blobs: (keyof Of<E>)[]; doubles: (keyof Of<E>)[] } } = {
  request: { blobs: ["route", "method"], doubles: ["status", "durationMs", "rowsRead", "rowsWritten"] },
  job: { blobs: ["kind", "portal", "result"], doubles: ["durationMs", "attempts"] },
  queue_lag: { blobs: ["kind"], doubles: ["lagMs"] },
  retry: { blobs: ["kind"], doubles: ["attempts"] },
  dead_letter: { blobs: ["kind"], doubles: [] },
  wallet: { blobs: ["entry", "portal"], doubles: ["cents"] },
  webhook_delivery: { blobs: ["result"], doubles: ["status", "durationMs"] },
};

export interface Metrics {
  record(event: MetricEvent): void;
}

export function toDataPoint(event: MetricEvent): AnalyticsEngineDataPoint {
  const shape = DATA_POINTS[event.event] as { blobs: string[]; doubles: string[] };
  const values = event as unknown as Record<string, string | number>;
  return {
    indexes: [event.event],
    blobs: [event.event, ...shape.blobs.map((name) => String(values[name]))],
    doubles: shape.doubles.map((name) => Number(values[name])),
  };
}

/** The metrics of an environment: its Analytics Engine dataset, or nothing where it has none. */
export function metricsOf(env: { METRICS?: AnalyticsEngineDataset }): Metrics {
  const dataset = env.METRICS;
  return {
    record(event) {
      // Metrics never break the work they describe.
      try {
        dataset?.writeDataPoint(toDataPoint(event));
      } catch {}
    },
  };
}
