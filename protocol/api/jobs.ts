// Answers of the system jobs API besides GET /api/schedules (whose shape is in schedules.ts): the shape
// functions/jobs/routes.ts sends (declared in its `responses`, so CHECK_ANSWERS holds the handler to it).
import * as z from 'zod';

/** POST /api/schedules/:name/run: the run asked for (once across replicas); started false when none was made. */
export const jobRunAccepted = z.object({ job: z.string(), scheduledFor: z.string().nullable(), started: z.boolean() });
export type JobRunAccepted = z.output<typeof jobRunAccepted>;
