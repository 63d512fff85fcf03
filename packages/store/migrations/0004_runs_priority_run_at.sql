ALTER TABLE "runs" ADD COLUMN "priority" integer;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "run_at" timestamp with time zone;