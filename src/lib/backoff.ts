/** Seconds before the next try of a job that failed transiently: 2, 4, 8, … up to 5 minutes. */
export const backoffSeconds = (attempts: number) => Math.min(300, 2 ** Math.max(1, attempts));
