-- A full ad's detail rows, kept beside it: `ad_details` holds, per ad, its attribute and setting rows as
-- JSON arrays of their column values (in the column order of src/db/schema/ads.ts, ordered as the view
-- shows them), rewritten by triggers in the statement that changes them. A full view reads one row for
-- them instead of every attribute and setting row: a page of 25 full ads read about 7 rows per ad, and
-- reads about 3. A write of k attribute rows reads the ad's rows k times more (small: k is a handful).
CREATE TABLE `ad_details` (
	`ad_id` integer PRIMARY KEY NOT NULL,
	`attribute_rows` text DEFAULT '[]' NOT NULL,
	`setting_rows` text DEFAULT '[]' NOT NULL,
	FOREIGN KEY (`ad_id`) REFERENCES `ads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
-- The status filter across every user seeks (status, id) instead of walking all ads in id order.
CREATE INDEX `ads_status_idx` ON `ads` (`status`);
--> statement-breakpoint
INSERT INTO `ad_details` (`ad_id`, `attribute_rows`, `setting_rows`)
  SELECT a.`id`,
    (SELECT json_group_array(json_array(`ad_id`, `portal`, `locale`, `key`, `value`, `value_number`, `seq`, `category_id`, `user_id`))
      FROM (SELECT * FROM `ad_attributes` WHERE `ad_id` = a.`id` ORDER BY `portal`, `seq`)),
    (SELECT json_group_array(json_array(`ad_id`, `portal`, `showcontact`, `autoreplace`, `video`))
      FROM (SELECT * FROM `ad_settings` WHERE `ad_id` = a.`id` ORDER BY `portal`))
  FROM `ads` a;
--> statement-breakpoint
CREATE TRIGGER `ad_details_ad_insert` AFTER INSERT ON `ads` BEGIN
  INSERT INTO `ad_details` (`ad_id`) VALUES (NEW.`id`);
END;
--> statement-breakpoint
CREATE TRIGGER `ad_details_attribute_insert` AFTER INSERT ON `ad_attributes` BEGIN
  UPDATE `ad_details` SET `attribute_rows` = (
    SELECT json_group_array(json_array(`ad_id`, `portal`, `locale`, `key`, `value`, `value_number`, `seq`, `category_id`, `user_id`))
    FROM (SELECT * FROM `ad_attributes` WHERE `ad_id` = NEW.`ad_id` ORDER BY `portal`, `seq`)
  ) WHERE `ad_id` = NEW.`ad_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `ad_details_attribute_update` AFTER UPDATE ON `ad_attributes` BEGIN
  UPDATE `ad_details` SET `attribute_rows` = (
    SELECT json_group_array(json_array(`ad_id`, `portal`, `locale`, `key`, `value`, `value_number`, `seq`, `category_id`, `user_id`))
    FROM (SELECT * FROM `ad_attributes` WHERE `ad_id` = NEW.`ad_id` ORDER BY `portal`, `seq`)
  ) WHERE `ad_id` = NEW.`ad_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `ad_details_attribute_delete` AFTER DELETE ON `ad_attributes` BEGIN
  UPDATE `ad_details` SET `attribute_rows` = (
    SELECT json_group_array(json_array(`ad_id`, `portal`, `locale`, `key`, `value`, `value_number`, `seq`, `category_id`, `user_id`))
    FROM (SELECT * FROM `ad_attributes` WHERE `ad_id` = OLD.`ad_id` ORDER BY `portal`, `seq`)
  ) WHERE `ad_id` = OLD.`ad_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `ad_details_setting_insert` AFTER INSERT ON `ad_settings` BEGIN
  UPDATE `ad_details` SET `setting_rows` = (
    SELECT json_group_array(json_array(`ad_id`, `portal`, `showcontact`, `autoreplace`, `video`))
    FROM (SELECT * FROM `ad_settings` WHERE `ad_id` = NEW.`ad_id` ORDER BY `portal`)
  ) WHERE `ad_id` = NEW.`ad_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `ad_details_setting_update` AFTER UPDATE ON `ad_settings` BEGIN
  UPDATE `ad_details` SET `setting_rows` = (
    SELECT json_group_array(json_array(`ad_id`, `portal`, `showcontact`, `autoreplace`, `video`))
    FROM (SELECT * FROM `ad_settings` WHERE `ad_id` = NEW.`ad_id` ORDER BY `portal`)
  ) WHERE `ad_id` = NEW.`ad_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `ad_details_setting_delete` AFTER DELETE ON `ad_settings` BEGIN
  UPDATE `ad_details` SET `setting_rows` = (
    SELECT json_group_array(json_array(`ad_id`, `portal`, `showcontact`, `autoreplace`, `video`))
    FROM (SELECT * FROM `ad_settings` WHERE `ad_id` = OLD.`ad_id` ORDER BY `portal`)
  ) WHERE `ad_id` = OLD.`ad_id`;
END;
