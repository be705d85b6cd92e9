/**
 * Entity tags and `If-Match` (RFC 9110 §8.8.3, §13.1.1): a resource's tag names the revision key its data
 * moves with and the key's revision, so a conditional write can check it in the write's own batch.
 */

/**
 * An `If-Match` precondition: the entity tags the caller last read (`"<revision key>.<revision>"`, as
 * `entityTag` makes them), or any (`*`: the resource exists, which every write checks anyway).
 */
export type Precondition = { any: true } | { any: false; tags: { key: string; revision: number }[] };

/** The ETag of a resource whose data moves with the revision key: strong, changed by every write under the key. */
export const entityTag = (key: string, revision: number) => `"${key}.${revision}"`;

/** The `If-Match` header as a precondition; tags that are weak or not ours never match (strong comparison). */
export function preconditionOf(ifMatch: string): Precondition {
  const tags = ifMatch.split(",").map((tag) => tag.trim());
  if (tags.includes("*")) return { any: true };
  return {
    any: false,
    tags: tags.flatMap((tag) => {
      const parsed = /^"(.+)\.(\d+)"$/.exec(tag);
      return parsed?.[1] && parsed[2] ? [{ key: parsed[1], revision: Number(parsed[2]) }] : [];
    }),
  };
}
