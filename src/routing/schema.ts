// The configuration of routing and filtering: the routes of a shared listener (first match wins,
// then the default) and an intake's drop rules, in the platform's optimization-rule shape.

import { z } from 'zod';
import { oneOrMany, senders } from '../core/config-parts.ts';
import { FACILITIES, SEVERITIES } from '../syslog/priorities.ts';

const textMatch = oneOrMany(z.string().min(1))
  .describe('"exact", "prefix*", "*suffix", or "/regular expression/flags"; a list matches any of them.');

export const routeSchema = z
  .strictObject({
    match: z
      .strictObject({
        sender: oneOrMany(z.string().min(1)).optional().describe('Sender address or CIDR (10.1.0.0/16, 2001:db8::/32); a list matches any.'),
        hostname: textMatch.optional(),
        app_name: textMatch.optional(),
        facility: oneOrMany(z.union([z.enum(FACILITIES), z.int().min(0).max(23)])).optional().describe('Facility name or number; a list matches any.'),
        severity: oneOrMany(z.union([z.enum(SEVERITIES), z.int().min(0).max(7)])).optional().describe('Severity name or number; a list matches any.'),
        message: oneOrMany(z.string().min(1)).optional()
          .describe('"text" contained in the message, or "/regular expression/flags" searched in it; a list matches any of them. Looked at last, only when the rest matched.'),
      })
      .prefault({})
      .describe('Conditions, all of which must hold (none: matches everything).'),
    intake: z.string().min(1).optional().describe('The intake that gets the matching events.'),
    drop: z.literal(true).optional().describe('Drop the matching events instead (counted).'),
  })
  .refine((r) => (r.intake === undefined) !== (r.drop === undefined), { message: 'a route needs either intake or drop: true' });

/** The fields a shared listener adds to its input's: routes and the default. */
export const routingFields = {
  routes: z.array(routeSchema).min(1).describe('Ordered routes: the first whose match holds decides where an event goes.'),
  default: z.string().min(1).default('drop').describe('The intake for events no route matches, or drop (counted as no_route).'),
  senders: senders.prefault({}),
};

const filterValue = z.union([z.string(), z.number(), z.boolean()]);
export const filterRule = z
  .strictObject({
    description: z.string().min(1).max(200).describe('What the rule drops; also its name in metrics.'),
    enabled: z.boolean().default(true),
    filters: z
      .array(
        z
          .strictObject({
            field: z.string().min(1).describe('hostname, app_name, procid, msgid, pri, facility, severity or sender; or a dotted path into a JSON message (process.name).'),
            operator: z.enum(['==', 'in']),
            value: z.union([filterValue, z.array(filterValue).min(1)]),
          })
          .refine((f) => (f.operator === 'in') === Array.isArray(f.value), { message: 'operator "in" takes a list of values, "==" a single value' }),
      )
      .min(1)
      .describe('Conditions, all of which must hold for an event to be dropped.'),
  })
  .describe('A drop rule in the platform\'s optimization-rule shape.');

export type RouteConfig = z.infer<typeof routeSchema>;
export type FilterRuleConfig = z.infer<typeof filterRule>;
