// The suite's one bound in time: a test's timeout, which only ends a test that hangs. Nothing in the
// suite counts tries or times an operation against a ceiling (a busy machine's speed would decide it);
// waiting (`eventually`) lasts as long as the test's time. Timed comparisons live in the neighbour suite
// (against a baseline measured in the same run) and in `npm run bench`.
export const DEFAULT_TEST_TIMEOUT_MS = 60_000;
