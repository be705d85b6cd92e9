-- The rules of a user that span two columns (services/accounts/users.ts checkUserRules), enforced by the
-- database so that two partial updates at once (one empties companyName, the other lastName) cannot
-- leave a user with neither. An anonymised user (deleted_at set) keeps neither on purpose.
CREATE TRIGGER `users_name_rule` BEFORE UPDATE OF `company_name`, `last_name` ON `users`
WHEN NEW.`deleted_at` IS NULL AND coalesce(NEW.`company_name`, '') = '' AND coalesce(NEW.`last_name`, '') = ''
BEGIN
  SELECT RAISE(ABORT, 'user without companyName and lastName');
END;
--> statement-breakpoint
CREATE TRIGGER `users_phone_rule` BEFORE UPDATE OF `phone`, `cellular` ON `users`
WHEN NEW.`deleted_at` IS NULL AND coalesce(NEW.`phone`, '') = '' AND coalesce(NEW.`cellular`, '') = ''
BEGIN
  SELECT RAISE(ABORT, 'user without phone and cellular');
END;
