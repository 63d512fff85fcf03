CREATE TABLE "code_options" (
	"kind" text NOT NULL,
	"name" text NOT NULL,
	"options" jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "code_options_kind_name_pk" PRIMARY KEY("kind","name")
);
--> statement-breakpoint
CREATE TABLE "config_versions" (
	"version" serial PRIMARY KEY NOT NULL,
	"yaml" text NOT NULL,
	"parsed" jsonb NOT NULL,
	"author" text NOT NULL,
	"file" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "workers" ADD COLUMN "config_version" integer;