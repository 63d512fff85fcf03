ALTER TABLE "processes" ADD COLUMN "flows" text[];--> statement-breakpoint
ALTER TABLE "flow_settings" ADD COLUMN "retired_at" timestamp with time zone;