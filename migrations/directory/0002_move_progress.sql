-- Issue 56, resumable group moves (src/db/moves/): a move's progress from its start until it is
-- confirmed, from which any runner (the move's request, the cron) resumes it.
ALTER TABLE `client_groups` ADD `move_progress` text;
