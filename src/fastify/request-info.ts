// A Fastify request as onceflow's framework-neutral HTTP parts read it.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { firstHeader, type HttpAnswer, type HttpRequestInfo } from '../http/request.js';

/** The {@link HttpRequestInfo} of a Fastify request (its `ip` honours Fastify's `trustProxy`). */
export function requestInfo(request: FastifyRequest): HttpRequestInfo {
  const headers = request.headers;
  return {
    method: request.method.toUpperCase(),
    url: request.url,
    ip: request.ip,
    header: (name) => firstHeader(headers, name),
  };
}

/** Sends one of the HTTP parts' own answers (a 429, 400, 409 or 422 problem). */
export function sendAnswer(reply: FastifyReply, answer: HttpAnswer): FastifyReply {
  reply.code(answer.status);
  for (const [name, value] of Object.entries(answer.headers)) reply.header(name, value);
  // Bytes, not a string: Fastify sends them as they are, and adds no `charset` to the type.
  return reply.send(Buffer.from(answer.body, 'utf8'));
}
