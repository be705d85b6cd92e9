-- maxImages of the user settings, enforced by the database: images stored plus jobs still waiting may
-- not pass it, so concurrent requests on one ad cannot either. A refused insert fails its whole batch.
CREATE TRIGGER `image_jobs_max_per_ad` BEFORE INSERT ON `image_jobs`
WHEN (SELECT count(*) FROM `ad_images` WHERE `ad_id` = NEW.`ad_id`)
   + (SELECT count(*) FROM `image_jobs` WHERE `ad_id` = NEW.`ad_id` AND `done` = 0)
   >= coalesce((SELECT `max_images` FROM `user_settings` WHERE `user_id` = NEW.`user_id`), 24)
BEGIN
  SELECT RAISE(ABORT, 'maxImages reached');
END;
