CREATE TABLE `traces` (
	`id` integer PRIMARY KEY NOT NULL,
	`uid` text NOT NULL,
	`spans` text NOT NULL,
	`count` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `traces_uid` ON `traces` (`uid`);