-- Issue 56, shards: the shard that holds a group's rows (src/db/shards.ts). A shard keeps a copy of its
-- groups, clients and id blocks from the directory (migrations/directory), which is authoritative.
ALTER TABLE `client_groups` ADD `shard` integer DEFAULT 1 NOT NULL;
