ALTER TABLE "flow_definitions" ADD COLUMN "registered_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
-- Until now the current version was the highest: each keeps its place by its creation time.
UPDATE "flow_definitions" SET "registered_at" = "created_at";
