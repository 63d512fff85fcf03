import type { FastifyPluginAsync } from "fastify";
import { AxScheduleNotFoundError } from "@ax/common";
import { describeSchedules, setPaused } from "@ax/coordinator";
import type { Db } from "@ax/store";

/** `GET /api/schedules`, `POST /api/flows/:flow/schedule/pause|resume`. */
export function scheduleRoutes(db: Db): FastifyPluginAsync {
  return async (app) => {
    app.get("/api/schedules", async () => ({ schedules: await describeSchedules(db) }));

    for (const action of ["pause", "resume"] as const) {
      app.post<{ Params: { flow: string } }>(`/api/flows/:flow/schedule/${action}`, async (request, reply) => {
        try {
          return await setPaused(db, request.params.flow, action === "pause");
        } catch (error) {
          if (error instanceof AxScheduleNotFoundError) return reply.status(404).send({ error: error.name, message: error.message });
          throw error;
        }
      });
    }
  };
}
