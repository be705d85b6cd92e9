/**
 * What one step of a move may spend: its time, and D1 queries. An invocation may make 1,000 (D1's "queries
 * per Worker invocation", its subrequests: a statement alone or a batch is one, every binding together); a
 * step's copy and catch-up stop at STEP_QUERIES, leaving the rest to what runs to its end once begun (the
 * lease, the fence, the numbering, the switch).
 */
export const STEP_QUERIES = 800;

/** A step keeps its progress in the directory every so many pages, so a step cut off loses at most these. */
export const SAVE_EVERY_PAGES = 25;

export class StepBudget {
  private queries = 0;

  constructor(
    readonly deadline: number,
    readonly maxQueries = STEP_QUERIES,
  ) {}

  /** Counts queries the step made. */
  spend(queries: number): void {
    this.queries += queries;
  }

  get spentQueries(): number {
    return this.queries;
  }

  /** Whether the step has spent its time, or too many queries to make `next` more. */
  exhausted(next: number): boolean {
    return Date.now() >= this.deadline || this.queries + next > this.maxQueries;
  }
}
