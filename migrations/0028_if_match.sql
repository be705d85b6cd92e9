PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_cache_revisions` (
	`scope` text PRIMARY KEY NOT NULL,
	`revision` integer DEFAULT 0 NOT NULL,
	CONSTRAINT "if_match" CHECK("revision" >= 0)
);
--> statement-breakpoint
INSERT INTO `__new_cache_revisions`("scope", "revision") SELECT "scope", "revision" FROM `cache_revisions`;--> statement-breakpoint
DROP TABLE `cache_revisions`;--> statement-breakpoint
ALTER TABLE `__new_cache_revisions` RENAME TO `cache_revisions`;--> statement-breakpoint
PRAGMA foreign_keys=ON;