CREATE TABLE `changes` (
	`rv` integer PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	`labels` text NOT NULL,
	`fields` text NOT NULL,
	`prev_labels` text,
	`prev_fields` text,
	`data` text NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `changes_at` ON `changes` (`at`);--> statement-breakpoint
CREATE INDEX `changes_key` ON `changes` (`namespace`,`name`,`rv`);--> statement-breakpoint
CREATE TABLE `meta` (
	`key` text PRIMARY KEY NOT NULL,
	`value` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `objects` (
	`namespace` text NOT NULL,
	`name` text NOT NULL,
	`uid` text NOT NULL,
	`rv` integer NOT NULL,
	`labels` text NOT NULL,
	`fields` text NOT NULL,
	`data` text NOT NULL,
	PRIMARY KEY(`namespace`, `name`)
);
