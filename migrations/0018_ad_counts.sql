CREATE TABLE `ad_counts` (
	`user_id` integer NOT NULL,
	`facet` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`user_id`, `facet`)
);
--> statement-breakpoint
CREATE INDEX `ads_user_order_idx` ON `ads` (`user_id`,`id`);
--> statement-breakpoint
-- Ads per user and facet, kept by the triggers below in the statement that writes the ad (a folder's
-- deletion, which sets its ads' folder to NULL, included): a list counts its matches from these rows.
INSERT INTO `ad_counts` (user_id, facet, n)
SELECT user_id, facet, count(*) FROM (
  SELECT user_id, '' AS facet FROM ads
  UNION ALL SELECT user_id, 'status:' || status FROM ads
  UNION ALL SELECT user_id, 'type:' || type FROM ads
  UNION ALL SELECT user_id, 'folder:' || folder_id FROM ads WHERE folder_id IS NOT NULL
  UNION ALL SELECT user_id, 'category:' || category_id FROM ads WHERE category_id IS NOT NULL
) GROUP BY user_id, facet;
--> statement-breakpoint
CREATE TRIGGER `ad_counts_insert` AFTER INSERT ON `ads` BEGIN
  INSERT INTO ad_counts (user_id, facet, n)
    SELECT new.user_id, column1, 1
    FROM (VALUES (''), ('status:' || new.status), ('type:' || new.type), ('folder:' || new.folder_id), ('category:' || new.category_id))
    WHERE column1 IS NOT NULL
    ON CONFLICT (user_id, facet) DO UPDATE SET n = n + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `ad_counts_delete` AFTER DELETE ON `ads` BEGIN
  UPDATE ad_counts SET n = n - 1
    WHERE user_id = old.user_id
      AND facet IN ('', 'status:' || old.status, 'type:' || old.type, 'folder:' || old.folder_id, 'category:' || old.category_id);
END;
--> statement-breakpoint
CREATE TRIGGER `ad_counts_update` AFTER UPDATE OF user_id, status, type, folder_id, category_id ON `ads`
  WHEN old.user_id IS NOT new.user_id OR old.status IS NOT new.status OR old.type IS NOT new.type
    OR old.folder_id IS NOT new.folder_id OR old.category_id IS NOT new.category_id BEGIN
  UPDATE ad_counts SET n = n - 1
    WHERE user_id = old.user_id
      AND facet IN ('', 'status:' || old.status, 'type:' || old.type, 'folder:' || old.folder_id, 'category:' || old.category_id);
  INSERT INTO ad_counts (user_id, facet, n)
    SELECT new.user_id, column1, 1
    FROM (VALUES (''), ('status:' || new.status), ('type:' || new.type), ('folder:' || new.folder_id), ('category:' || new.category_id))
    WHERE column1 IS NOT NULL
    ON CONFLICT (user_id, facet) DO UPDATE SET n = n + 1;
END;
