// The proxy ships in onceflow/testing; tests import it from here as before.
export { startTcpProxy, type TcpProxy, type TcpProxyOptions } from '../../src/testing/tcp-proxy.js';
