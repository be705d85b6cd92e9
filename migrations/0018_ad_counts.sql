CREATE TABLE `ad_counts` (
	`user_id` integer NOT NULL,
	`facet` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`user_id`, `facet`)
);
--> statement-breakpoint
CREATE TABLE `client_ad_counts` (
	`facet` text NOT NULL,
	`client_id` integer NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`facet`, `client_id`)
);
--> statement-breakpoint
CREATE INDEX `ads_user_order_idx` ON `ads` (`user_id`,`id`);
--> statement-breakpoint
-- Ads per user and facet, and per client over its users that are not deleted, kept by the triggers below
-- in the statement that writes the ad (a folder's deletion, which sets its ads' folder to NULL, included)
-- or moves or deletes the user: a list reads its count from these rows. A trigger cannot call another's
-- body, so each writes its facets out: '', status, type, folder, category.
INSERT INTO `ad_counts` (user_id, facet, n)
SELECT user_id, facet, count(*) FROM (
  SELECT user_id, '' AS facet FROM ads
  UNION ALL SELECT user_id, 'status:' || status FROM ads
  UNION ALL SELECT user_id, 'type:' || type FROM ads
  UNION ALL SELECT user_id, 'folder:' || folder_id FROM ads WHERE folder_id IS NOT NULL
  UNION ALL SELECT user_id, 'category:' || category_id FROM ads WHERE category_id IS NOT NULL
) GROUP BY user_id, facet;
--> statement-breakpoint
INSERT INTO `client_ad_counts` (client_id, facet, n)
SELECT coalesce(u.client_id, 0), c.facet, sum(c.n) FROM ad_counts c JOIN users u ON u.id = c.user_id
WHERE u.deleted_at IS NULL GROUP BY 1, 2;
--> statement-breakpoint
CREATE TRIGGER `ad_counts_insert` AFTER INSERT ON `ads` BEGIN
  INSERT INTO ad_counts (user_id, facet, n)
    SELECT new.user_id, column1, 1
    FROM (VALUES (''), ('status:' || new.status), ('type:' || new.type), ('folder:' || new.folder_id), ('category:' || new.category_id))
    WHERE column1 IS NOT NULL
    ON CONFLICT (user_id, facet) DO UPDATE SET n = n + 1;
  INSERT INTO client_ad_counts (client_id, facet, n)
    SELECT coalesce(u.client_id, 0), column1, 1
    FROM users u, (VALUES (''), ('status:' || new.status), ('type:' || new.type), ('folder:' || new.folder_id), ('category:' || new.category_id))
    WHERE u.id = new.user_id AND u.deleted_at IS NULL AND column1 IS NOT NULL
    ON CONFLICT (facet, client_id) DO UPDATE SET n = n + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `ad_counts_delete` AFTER DELETE ON `ads` BEGIN
  UPDATE ad_counts SET n = n - 1
    WHERE user_id = old.user_id
      AND facet IN ('', 'status:' || old.status, 'type:' || old.type, 'folder:' || old.folder_id, 'category:' || old.category_id);
  UPDATE client_ad_counts SET n = n - 1
    WHERE client_id = (SELECT coalesce(client_id, 0) FROM users WHERE id = old.user_id AND deleted_at IS NULL)
      AND facet IN ('', 'status:' || old.status, 'type:' || old.type, 'folder:' || old.folder_id, 'category:' || old.category_id);
END;
--> statement-breakpoint
CREATE TRIGGER `ad_counts_update` AFTER UPDATE OF user_id, status, type, folder_id, category_id ON `ads`
  WHEN old.user_id IS NOT new.user_id OR old.status IS NOT new.status OR old.type IS NOT new.type
    OR old.folder_id IS NOT new.folder_id OR old.category_id IS NOT new.category_id BEGIN
  UPDATE ad_counts SET n = n - 1
    WHERE user_id = old.user_id
      AND facet IN ('', 'status:' || old.status, 'type:' || old.type, 'folder:' || old.folder_id, 'category:' || old.category_id);
  UPDATE client_ad_counts SET n = n - 1
    WHERE client_id = (SELECT coalesce(client_id, 0) FROM users WHERE id = old.user_id AND deleted_at IS NULL)
      AND facet IN ('', 'status:' || old.status, 'type:' || old.type, 'folder:' || old.folder_id, 'category:' || old.category_id);
  INSERT INTO ad_counts (user_id, facet, n)
    SELECT new.user_id, column1, 1
    FROM (VALUES (''), ('status:' || new.status), ('type:' || new.type), ('folder:' || new.folder_id), ('category:' || new.category_id))
    WHERE column1 IS NOT NULL
    ON CONFLICT (user_id, facet) DO UPDATE SET n = n + 1;
  INSERT INTO client_ad_counts (client_id, facet, n)
    SELECT coalesce(u.client_id, 0), column1, 1
    FROM users u, (VALUES (''), ('status:' || new.status), ('type:' || new.type), ('folder:' || new.folder_id), ('category:' || new.category_id))
    WHERE u.id = new.user_id AND u.deleted_at IS NULL AND column1 IS NOT NULL
    ON CONFLICT (facet, client_id) DO UPDATE SET n = n + 1;
END;
--> statement-breakpoint
-- A user who moves to another client or is deleted takes their counts from the client they leave (unless
-- they were deleted) to the one they join (unless they are deleted now).
CREATE TRIGGER `client_ad_counts_user_moves` AFTER UPDATE OF client_id, deleted_at ON `users`
  WHEN old.client_id IS NOT new.client_id OR old.deleted_at IS NOT new.deleted_at BEGIN
  UPDATE client_ad_counts
    SET n = n - coalesce((SELECT c.n FROM ad_counts c WHERE c.user_id = old.id AND c.facet = client_ad_counts.facet), 0)
    WHERE old.deleted_at IS NULL AND client_id = coalesce(old.client_id, 0);
  INSERT INTO client_ad_counts (client_id, facet, n)
    SELECT coalesce(new.client_id, 0), facet, n FROM ad_counts WHERE user_id = new.id AND new.deleted_at IS NULL
    ON CONFLICT (facet, client_id) DO UPDATE SET n = n + excluded.n;
END;
