DROP INDEX "runs_status";--> statement-breakpoint
DROP INDEX "runs_business_key";--> statement-breakpoint
CREATE INDEX "runs_status" ON "runs" USING btree ("status") WHERE "runs"."status" <> 'success';--> statement-breakpoint
CREATE INDEX "runs_business_key" ON "runs" USING btree ("business_key") WHERE "runs"."business_key" is not null;