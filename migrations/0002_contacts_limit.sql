-- maxContacts of the user settings, enforced by the database so concurrent creates cannot pass it.
CREATE TRIGGER `contacts_max_per_user` BEFORE INSERT ON `contacts`
WHEN (SELECT count(*) FROM `contacts` WHERE `user_id` = NEW.`user_id`) >=
     coalesce((SELECT `max_contacts` FROM `user_settings` WHERE `user_id` = NEW.`user_id`), 25)
BEGIN
  SELECT RAISE(ABORT, 'maxContacts reached');
END;
