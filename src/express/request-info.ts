// What the framework-neutral HTTP parts read of an Express request (src/http/request.ts).
import type { Request } from 'express';
import { firstHeader, type HttpRequestInfo } from '../http/request.js';

/**
 * The request as the HTTP parts see it: `originalUrl` (the path and query as the client sent
 * them, whatever router the middleware is mounted on), `req.ip` (Express's `trust proxy` decides
 * whose address it is), and the first value of a header.
 */
export function requestInfo(req: Request): HttpRequestInfo {
  return {
    method: req.method.toUpperCase(),
    url: req.originalUrl,
    ip: req.ip,
    header: (name) => firstHeader(req.headers, name),
  };
}
