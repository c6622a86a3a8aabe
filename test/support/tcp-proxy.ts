// The proxy ships in onceflow/testing; tests import it from here, one path for every test.
export { startTcpProxy, type TcpProxy, type TcpProxyOptions } from '../../src/testing/tcp-proxy.js';
