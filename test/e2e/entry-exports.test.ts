// Each entry point's export list, pinned: a name added to or dropped from the public surface is a
// deliberate edit of this file, never a side effect of a refactor. Values are read from the
// built JavaScript (what `import` gives at run time), types from the built declarations (what
// `tsc` gives a consumer), both from dist/ as the package ships it.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

interface Surface {
  /** Names with a run-time value (functions, classes, constants). */
  values: string[];
  /** Names that are types only (interfaces, type aliases). */
  types: string[];
}

const PINNED: Record<string, Surface> = {
  onceflow: {
    values: [
      'AdaptiveTimeout',
      'BloomFilter',
      'ClockRollbackError',
      'ClosedError',
      'DEFAULT_JOURNAL_ENTRIES',
      'DEFAULT_MAX_RESULT_BYTES',
      'ErrorCode',
      'FakeClock',
      'InProgressError',
      'InvalidArgumentError',
      'InvalidDurationError',
      'InvalidOptionError',
      'LIMITS',
      'LeaseLostError',
      'MAX_BLOOM_BYTES',
      'MAX_BLOOM_KEY_LENGTH',
      'OnceflowError',
      'PayloadMismatchError',
      'ReorderBuffer',
      'ResultTooLargeError',
      'SeenFilter',
      'SequenceGuard',
      'SignatureWindow',
      'Snowflake',
      'StoreError',
      'VersionGate',
      'bloomBits',
      'createCompensator',
      'createIdempotency',
      'createLedger',
      'createLimiter',
      'createLocalFirstLimiter',
      'createLookupGuard',
      'createReorderer',
      'createTenantRegistry',
      'defineSignature',
      'idempotent',
      'isOnceflowError',
      'jsonSerializer',
      'memoryStore',
      'nextTickAt',
      'observeStore',
      'parseDuration',
      'rateLimitHeaders',
      'systemClock',
      'ticker',
      'window',
    ],
    types: [
      'AdaptiveTimeoutEvent',
      'AdaptiveTimeoutOptions',
      'AdaptiveTimeoutStats',
      'AdmitOutcome',
      'Algorithm',
      'AllowedDecision',
      'AllowingReason',
      'ApplyResult',
      'Balances',
      'BloomFilterOptions',
      'Clock',
      'Compensator',
      'CompensatorEvent',
      'CompensatorOptions',
      'CompensatorStats',
      'Decision',
      'DecisionReason',
      'DecodedSnowflake',
      'DegradedPolicy',
      'Duration',
      'EventShape',
      'FieldType',
      'GapRange',
      'GuardDecision',
      'GuardGetEvent',
      'GuardStateEvent',
      'Idempotency',
      'IdempotencyCall',
      'IdempotencyLeaseLostEvent',
      'IdempotencyPreCheckEvent',
      'IdempotencyOptions',
      'IdempotencyRunEvent',
      'IdempotentOptions',
      'JournalEntry',
      'JournalQuery',
      'JsonValue',
      'Ledger',
      'LedgerApplyEvent',
      'LedgerPreCheckEvent',
      'LedgerEntry',
      'LedgerOptions',
      'LedgerResolveEvent',
      'LimitDecision',
      'LimitName',
      'LimitOptions',
      'Limiter',
      'LimiterKey',
      'LimiterState',
      'LimitStateOf',
      'LimiterDecisionEvent',
      'LimiterDegradedEvent',
      'LimiterDeviationEvent',
      'LimiterLeaseEvent',
      'LimiterOptions',
      'LocalFirstLimiter',
      'LocalFirstLimiterOptions',
      'LocalFirstOptions',
      'LookupGuard',
      'LookupGuardOptions',
      'LookupGuardState',
      'LookupGuardStats',
      'MemoryStoreOptions',
      'ObservedDecisionReason',
      'ObservedStoreOutcome',
      'Observer',
      'OnceflowEvent',
      'Order',
      'PushOutcome',
      'PushResult',
      'RefusedDecision',
      'RefusingReason',
      'Release',
      'ReorderBufferOptions',
      'ReorderGapEvent',
      'ReorderPushEvent',
      'ReorderStats',
      'TakeOptions',
      'Reorderer',
      'ReordererOptions',
      'ResolveResult',
      'RunOptions',
      'RunResult',
      'SavedAdaptiveTimeout',
      'SavedBloomFilter',
      'SavedReorderBuffer',
      'SavedSeenFilter',
      'SavedWindow',
      'SequenceGuardOptions',
      'Serializer',
      'SignatureFn',
      'SignatureOptions',
      'SignatureSchema',
      'SeenFilterOptions',
      'SeenQuery',
      'PreCheckOutcome',
      'SignatureWindowOptions',
      'SnowflakeEvent',
      'SnowflakeOptions',
      'Store',
      'StoreCallEvent',
      'StoreOutcome',
      'TenantEvent',
      'TenantPolicy',
      'TenantRegistry',
      'TenantRegistryOptions',
      'Tick',
      'TickResult',
      'Ticker',
      'TickerOptions',
      'VersionGateEvent',
      'VersionGateOptions',
      'VersionGateResult',
      'WindowConfig',
      'WindowState',
    ],
  },
  'onceflow/store': {
    values: [
      'ErrorCode',
      'InvalidArgumentError',
      'InvalidOptionError',
      'OnceflowError',
      'StoreError',
      'isOnceflowError',
    ],
    types: [
      'Algorithm',
      'ApplyOutcome',
      'Balances',
      'IdempotencyBeginCommand',
      'IdempotencyBeginReply',
      'IdempotencyRecordState',
      'IdempotencyStoreOps',
      'JournalEntry',
      'JournalQuery',
      'JsonValue',
      'LeaseReply',
      'LedgerApplyCommand',
      'LedgerApplyResult',
      'LedgerResolveResult',
      'LimitCall',
      'LimitSpec',
      'LimitVerdict',
      'LimiterAdjustCommand',
      'LimiterAdjustReply',
      'LimiterDeleteCommand',
      'LimitState',
      'LimiterTakeCommand',
      'LimiterTakeReply',
      'OrderingStoreOps',
      'ResolveOutcome',
      'Store',
      'StoreOutcome',
      'Verdict',
      'VersionUpsertReply',
      'WindowState',
    ],
  },
  'onceflow/testing': {
    values: [
      'conformance',
      'freePort',
      'pingable',
      'postgresAnswers',
      'startCluster',
      'startPostgres',
      'startRedis',
      'startTcpProxy',
      'testPortRange',
      'wrapStore',
    ],
    types: [
      'AnyCase',
      'CaseResult',
      'ClusterNode',
      'ClusterOptions',
      'OutageHook',
      'PortRange',
      'RunOptions',
      'StartedCluster',
      'StartedPostgres',
      'StartedRedis',
      'Suite',
      'SuiteName',
      'TcpProxy',
      'TcpProxyOptions',
    ],
  },
  'onceflow/redis': {
    values: ['NotReplicatedError', 'createRedisStore', 'escapeId', 'scripts'],
    types: ['DurabilityOptions', 'LuaScript', 'RedisLike', 'RedisStoreOptions', 'ReplicationShortfall'],
  },
  'onceflow/postgres': {
    values: ['SCHEMA_VERSION', 'createPostgresStore', 'migrate', 'withTransaction'],
    types: [
      'CleanupResult',
      'MigrateOptions',
      'MigrateResult',
      'PgPoolClientLike',
      'PgPoolLike',
      'PgQueryConfig',
      'PgQueryable',
      'PgResult',
      'PoolClientOf',
      'PostgresStore',
      'PostgresStoreOptions',
      'TransactionOptions',
      'TransactionStore',
    ],
  },
  'onceflow/streams': {
    values: [
      'BacklogFullError',
      'DeadLetterFailedError',
      'PublishFailedError',
      'checkReaderPosition',
      'checkTrimmedPast',
      'classifyStreamError',
      'createStreamConsumer',
      'createStreamProducer',
      'forgetStreamFeatures',
      'parseDeadLetter',
      'parseStreamId',
      'readWindow',
      'startRetention',
      'streamFeatures',
      'streamWindows',
      'trimStream',
      'writeDeadLetter',
    ],
    types: [
      'CheckReaderPositionOptions',
      'CheckTrimmedPastOptions',
      'DeadLetter',
      'DeadLetterReason',
      'DecodedWindowEntry',
      'Delivery',
      'ProducerEvent',
      'ReadWindowOptions',
      'ReaderPosition',
      'Retention',
      'RetentionOptions',
      'RetryOptions',
      'StreamClient',
      'StreamConsumer',
      'StreamConsumerEvent',
      'StreamConsumerOptions',
      'StreamConsumerStats',
      'StreamFailure',
      'StreamFeatures',
      'StreamId',
      'StreamLedgerOptions',
      'StreamPreCheck',
      'StreamPreCheckEvent',
      'StreamProducer',
      'StreamProducerOptions',
      'StreamWindow',
      'StreamWindowsOptions',
      'TrimResult',
      'TrimStreamOptions',
      'TrimmedPastCheck',
      'TrimmedPastEvent',
      'UndecodableWindowEntry',
      'WindowEntry',
    ],
  },
  'onceflow/ws': {
    values: [
      'ACK_CODES',
      'BodyRefusedError',
      'WS_CODES',
      'WS_LIMITS',
      'WS_SUBPROTOCOL',
      'WS_VERSION',
      'createGateway',
      'createPublisher',
      'encodeClientFrame',
      'encodeServerFrame',
      'isWsErrorCode',
      'parseClientFrame',
      'parseServerFrame',
    ],
    types: [
      'AuthResult',
      'ClientAckFrame',
      'ClientFrame',
      'ClientMsgFrame',
      'ConnectionState',
      'ErrorFrame',
      'FrameErrorCode',
      'FrameLimits',
      'Gateway',
      'GatewayEvent',
      'GatewayLimit',
      'GatewayMessage',
      'GatewayOptions',
      'HandlerSpec',
      'Handlers',
      'HelloFrame',
      'JsonValue',
      'MessageHandler',
      'ParseResult',
      'PingFrame',
      'PongFrame',
      'PublishOptions',
      'Publisher',
      'PublisherOptions',
      'Resume',
      'SendPolicyOptions',
      'ServerAckFrame',
      'ServerFrame',
      'ServerMsgFrame',
      'StreamPosition',
      'UserStreamsOptions',
      'WelcomeFrame',
      'WelcomeLimits',
      'WsAckCode',
      'WsCode',
      'WsErrorCode',
    ],
  },
  'onceflow/express': {
    values: ['OnceflowStore', 'createExpressRateLimitStore', 'idempotencyKey', 'rateLimit'],
    types: ['ClientRateLimitInfo', 'IdempotencyKeyOptions', 'OnceflowStoreOptions', 'RateLimitOptions'],
  },
  'onceflow/fastify': {
    values: ['idempotencyPlugin', 'rateLimitPlugin', 'rateLimitStore'],
    types: [
      'IdempotencyPluginOptions',
      'OnceflowRateLimitStore',
      'OnceflowRouteConfig',
      'RateLimitPluginOptions',
      'RateLimitStoreOptions',
      'RouteIdempotency',
      'RouteRateLimit',
    ],
  },
  'onceflow/hono': {
    values: ['idempotencyKey', 'rateLimit'],
    types: ['IdempotencyKeyOptions', 'RateLimitOptions'],
  },
  'onceflow/metrics': {
    values: [
      'METRICS',
      'STORE_CALL_BUCKETS',
      'buildDashboard',
      'createMetrics',
      'createOtelMetrics',
      'dashboardPanels',
    ],
    types: [
      'DashboardPanel',
      'LabelDefinition',
      'MetricDefinition',
      'Metrics',
      'MetricsOptions',
      'ObservedEvent',
      'OtelMetrics',
      'OtelMetricsOptions',
    ],
  },
  'onceflow/ws/client': {
    values: ['WsClientError', 'createClient', 'isWsClientError'],
    types: [
      'Client',
      'ClientEvents',
      'ClientOptions',
      'ClientState',
      'ReconnectOptions',
      'Resume',
      'SendOptions',
      'SendResult',
      'ServerMessage',
      'UnknownMessage',
      'WebSocketConstructor',
      'WelcomeFrame',
      'WsClientErrorCode',
      'WsClientErrorDetails',
    ],
  },
};

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { types: string; import: string }>;
};

/** Every entry point of the exports map, by the specifier a consumer writes, with its files. */
const entries = Object.entries(pkg.exports).flatMap(([subpath, target]) =>
  typeof target === 'string'
    ? []
    : [{ name: subpath === '.' ? 'onceflow' : `onceflow/${subpath.slice(2)}`, ...target }],
);

/** The names each built declaration file exports (values and types), through the compiler. */
function declaredNames(): Map<string, string[]> {
  const files = entries.map((e) => join(root, e.types));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: ['node'],
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const names = new Map<string, string[]>();
  for (const entry of entries) {
    const source = program.getSourceFile(join(root, entry.types));
    const symbol = source && checker.getSymbolAtLocation(source);
    if (!symbol) throw new Error(`no module for ${entry.types}`);
    names.set(
      entry.name,
      checker.getExportsOfModule(symbol).map((s) => s.name),
    );
  }
  return names;
}

const sorted = (names: Iterable<string>) => [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

describe('each entry point exports exactly its pinned names', () => {
  let declared = new Map<string, string[]>();
  beforeAll(() => {
    execFileSync(process.execPath, [join(root, 'scripts', 'ensure-built.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
    declared = declaredNames();
  }, 120_000);

  it('every entry of the exports map is pinned here, and every pinned one is in the map', () => {
    expect(sorted(entries.map((e) => e.name))).toEqual(sorted(Object.keys(PINNED)));
  });

  it('every entry file opens with a @module comment saying what the entry is for', () => {
    for (const entry of entries) {
      const source = readFileSync(
        join(root, entry.import.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts')),
        'utf8',
      );
      const opening = /^\/\*\*[\s\S]*?\*\//.exec(source)?.[0] ?? '';
      expect(opening, entry.name).toContain('@module');
      expect(opening, entry.name).toContain(`\`${entry.name}\``);
    }
  });

  for (const entry of entries) {
    it(`${entry.name}: values from the built module, types from its declarations`, async () => {
      const pinned = PINNED[entry.name] as Surface;
      const values = sorted(Object.keys(await import(pathToFileURL(join(root, entry.import)).href)));
      expect(values).toEqual(sorted(pinned.values));
      const names = declared.get(entry.name) ?? [];
      // The declarations name every value too (a value missing there would be untyped).
      expect(sorted(names.filter((n) => values.includes(n)))).toEqual(values);
      expect(sorted(names.filter((n) => !values.includes(n)))).toEqual(sorted(pinned.types));
    });
  }
});
