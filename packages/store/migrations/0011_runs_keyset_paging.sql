DROP INDEX "runs_created";--> statement-breakpoint
DROP INDEX "runs_flow_created";--> statement-breakpoint
CREATE INDEX "runs_created_id" ON "runs" USING btree ("created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "runs_flow_created" ON "runs" USING btree ("flow","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);