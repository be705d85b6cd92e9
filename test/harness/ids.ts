// Ids past the blocks a test's rows fill: years of a table's growth in a moment (src/db/ids.ts).
import { env } from "cloudflare:test";
import { ID_BLOCK_SIZE, ID_BLOCK_SLACK } from "../../src/db/ids";

/**
 * The directory has leased `group` the block `farBlock` of `kind`, and the group's latest block on its
 * shard (the one `latestId` lies in) is spent: the group's next row of `kind` leases the block past the
 * far one (a lease goes past every block).
 */
export async function leapToBlock(input: {
  kind: string;
  group: number;
  shard: D1Database;
  latestId: number;
  farBlock: number;
}): Promise<void> {
  const latest = Math.floor(input.latestId / ID_BLOCK_SIZE);
  await env.DIRECTORY.prepare("INSERT INTO id_blocks (kind, block, group_id) VALUES (?, ?, ?)")
    .bind(input.kind, input.farBlock, input.group)
    .run();
  await input.shard
    .prepare("UPDATE id_blocks SET deleted_high = ? WHERE kind = ? AND block = ?")
    .bind((latest + 1) * ID_BLOCK_SIZE - ID_BLOCK_SLACK, input.kind, latest)
    .run();
}
