package io.goredisson.peer;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import javax.net.ssl.TrustManagerFactory;
import java.io.File;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.RedissonMultiLock;
import org.redisson.RedissonRedLock;
import org.redisson.api.RAtomicLong;
import org.redisson.api.RBucket;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.ClusterServersConfig;
import org.redisson.config.Config;
import org.redisson.config.SingleServerConfig;

/**
 * A Redisson peer driven over stdin/stdout by the Go interop tests (integration/javapeer).
 *
 * <p>Request: {@code ID OWNER CMD ARGS...} or a global {@code ID CMD} (clientid, ping, version, quit).
 * Reply: {@code ID ok VALUE ELAPSED_US} or {@code ID err CLASS MESSAGE... ELAPSED_US}.
 * Each distinct OWNER is one dedicated Java thread that runs its requests in order, so Redisson
 * sees one stable thread id per owner. Replies of one owner come in request order; replies of
 * different owners come as they finish. See ../README.md for the full protocol.
 *
 * <p>Options ({@code --name=value}, or the environment variable in brackets):
 * {@code --redis} [PEER_REDIS] single server address, default redis://127.0.0.1:6379;
 * {@code --cluster} [PEER_CLUSTER] comma-separated node addresses (cluster mode, overrides --redis);
 * {@code --sharded-subscription-mode} [PEER_SHARDED_SUBSCRIPTION_MODE] AUTO, ON or OFF: the cluster
 * config's shardedSubscriptionMode, default Redisson's AUTO (cluster mode only);
 * {@code --username}, {@code --password} [PEER_USERNAME, PEER_PASSWORD] single server: the ACL user;
 * {@code --ca-pem} [PEER_CA_PEM] single server: a PEM file of CA certificates to trust for rediss://;
 * {@code --watchdog-ms} [PEER_WATCHDOG_MS] lockWatchdogTimeout, default Redisson's 30000;
 * {@code --group} [PEER_GROUP] comma-separated single-server addresses, one more RedissonClient
 * each, for the multilock.* and redlock.* commands;
 * {@code --log-level} [PEER_LOG_LEVEL] slf4j-simple level on stderr, default warn.
 */
public final class Peer {
    private static final String VOID = "-";

    private final RedissonClient redisson;
    private final List<RedissonClient> group; // --group: one client per server
    private final PrintStream out;
    private final Map<String, Owner> owners = new HashMap<>(); // touched by the stdin thread only

    private Peer(RedissonClient redisson, List<RedissonClient> group, PrintStream out) {
        this.redisson = redisson;
        this.group = group;
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = parseArgs(args);
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", opt(opts, "log-level", "PEER_LOG_LEVEL", "warn"));
        // stdout belongs to the protocol: anything else printing to System.out goes to stderr.
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);

        Config config = new Config();
        String watchdog = opt(opts, "watchdog-ms", "PEER_WATCHDOG_MS", "");
        if (!watchdog.isEmpty()) {
            config.setLockWatchdogTimeout(Long.parseLong(watchdog));
        }
        String cluster = opt(opts, "cluster", "PEER_CLUSTER", "");
        String sharded = opt(opts, "sharded-subscription-mode", "PEER_SHARDED_SUBSCRIPTION_MODE", "");
        if (!cluster.isEmpty()) {
            ClusterServersConfig servers = config.useClusterServers().addNodeAddress(cluster.split(","));
            if (!sharded.isEmpty()) { // Redisson 3.29.0+
                Class<?> mode = Class.forName("org.redisson.config.ShardedSubscriptionMode");
                call(ClusterServersConfig.class, servers, "setShardedSubscriptionMode", types(mode), enumValue(mode, sharded));
            }
        } else {
            if (!sharded.isEmpty()) {
                throw new IllegalArgumentException("--sharded-subscription-mode needs --cluster");
            }
            SingleServerConfig single = config.useSingleServer().setAddress(opt(opts, "redis", "PEER_REDIS", "redis://127.0.0.1:6379"));
            String username = opt(opts, "username", "PEER_USERNAME", "");
            if (!username.isEmpty()) {
                single.setUsername(username);
            }
            String password = opt(opts, "password", "PEER_PASSWORD", "");
            if (!password.isEmpty()) {
                single.setPassword(password);
            }
            String caPem = opt(opts, "ca-pem", "PEER_CA_PEM", "");
            if (!caPem.isEmpty()) {
                trustOnly(single, caPem);
            }
        }

        List<RedissonClient> group = new ArrayList<>();
        String groupAddrs = opt(opts, "group", "PEER_GROUP", "");
        if (!groupAddrs.isEmpty()) {
            for (String addr : groupAddrs.split(",")) {
                Config c = new Config();
                if (!watchdog.isEmpty()) {
                    c.setLockWatchdogTimeout(Long.parseLong(watchdog));
                }
                c.useSingleServer().setAddress(addr);
                group.add(Redisson.create(c));
            }
        }

        Peer peer = new Peer(Redisson.create(config), group, protocol);
        peer.reply("ready");
        peer.serve(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));
    }

    /**
     * Makes single trust only the CA certificates in the PEM file at path (for rediss://): through
     * a trust manager (Redisson 3.22.0+), or else a PKCS12 trust store in a temporary file.
     */
    private static void trustOnly(SingleServerConfig single, String path) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        try (InputStream in = new FileInputStream(path)) {
            int i = 0;
            for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                ks.setCertificateEntry("ca" + i++, c);
            }
        }
        if (has(SingleServerConfig.class, "setSslTrustManagerFactory", TrustManagerFactory.class)) {
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(ks);
            call(SingleServerConfig.class, single, "setSslTrustManagerFactory", types(TrustManagerFactory.class), tmf);
            return;
        }
        File store = File.createTempFile("peer-truststore", ".p12");
        store.deleteOnExit();
        char[] password = "peer-truststore".toCharArray();
        try (FileOutputStream out = new FileOutputStream(store)) {
            ks.store(out, password);
        }
        single.setSslTruststore(store.toURI().toURL());
        single.setSslTruststorePassword(new String(password));
    }

    /** Reads requests until EOF or quit; global commands run inline, owner commands are queued. */
    private void serve(BufferedReader in) throws Exception {
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split("\\s+");
            if (f.length < 2) {
                if (!line.isBlank()) {
                    System.err.println("peer: malformed request: " + line);
                    reply("0 err java.lang.IllegalArgumentException malformed_request 0");
                }
                continue;
            }
            if (f.length == 2) { // ID CMD
                long start = System.nanoTime();
                if (f[1].equals("quit")) {
                    reply(f[0] + " ok bye " + micros(start));
                    break;
                }
                respond(f[0], start, () -> global(f[1]));
                continue;
            }
            Request r = new Request(f[0], f[2], Arrays.copyOfRange(f, 3, f.length));
            owners.computeIfAbsent(f[1], Owner::new).queue.add(r);
        }
        redisson.shutdown(0, 2, TimeUnit.SECONDS);
        for (RedissonClient c : group) {
            c.shutdown(0, 2, TimeUnit.SECONDS);
        }
        System.exit(0);
    }

    private String global(String cmd) {
        switch (cmd) {
            case "ping": return "pong";
            case "clientid": return redisson.getId(); // ServiceManager id: the UUID in the lock-holder field
            case "version": return redissonVersion();
            case "features": return features();
            default: throw new IllegalArgumentException("unknown global command: " + cmd);
        }
    }

    /** One owner = one platform thread, alive for the life of the peer. */
    private final class Owner implements Runnable {
        final BlockingQueue<Request> queue = new LinkedBlockingQueue<>();
        final Map<String, RLock> locks = new HashMap<>(); // one RLock object per name, as in normal Java code
        final Map<String, RLock> groups = new HashMap<>(); // one multilock/redlock object per type and names
        WaiterScale scale; // the owner's many waiters (scale.*)

        Owner(String name) {
            Thread t = new Thread(this, "owner-" + name);
            t.setDaemon(true);
            t.start();
        }

        @Override
        public void run() {
            while (true) {
                Request r;
                try {
                    r = queue.take();
                } catch (InterruptedException e) {
                    return;
                }
                respond(r.id, System.nanoTime(), () -> execute(r.cmd, r.args));
            }
        }

        private String execute(String command, String[] a) throws Exception {
            // "TYPE.CMD" runs CMD on another lock type: fenced, spin, nonreentrant, fair, read, write.
            int dot = command.indexOf('.');
            String type = dot < 0 ? "" : command.substring(0, dot);
            String cmd = command.substring(dot + 1);
            if (type.equals("latch")) {
                return latch(cmd, a);
            }
            if (type.equals("sem")) {
                return semaphore(cmd, a);
            }
            if (type.equals("xsem")) {
                return expirableSemaphore(cmd, a);
            }
            if (type.equals("multilock") || type.equals("redlock")) {
                return group(type, cmd, a);
            }
            if (type.equals("scale")) {
                if (scale == null) {
                    scale = new WaiterScale(redisson);
                }
                return scale.run(cmd, a);
            }
            if (type.equals("fenced")) {
                String token = fenced(cmd, a);
                if (token != null) {
                    return token;
                }
            }
            switch (cmd) {
                case "lock": {
                    long lease = a.length > 1 ? Long.parseLong(a[1]) : -1;
                    if (lease == -1) {
                        lock(type, a).lock();
                    } else {
                        lock(type, a).lock(lease, TimeUnit.MILLISECONDS);
                    }
                    return "true";
                }
                case "trylock":
                    if (a.length == 1) {
                        return String.valueOf(lock(type, a).tryLock());
                    }
                    need(a, 3);
                    return String.valueOf(lock(type, a).tryLock(Long.parseLong(a[1]), Long.parseLong(a[2]), TimeUnit.MILLISECONDS));
                case "unlock":
                    lock(type, a).unlock();
                    return VOID;
                case "forceunlock": return String.valueOf(lock(type, a).forceUnlock());
                case "islocked":    return String.valueOf(lock(type, a).isLocked());
                case "isheld":      return String.valueOf(lock(type, a).isHeldByCurrentThread());
                case "holdcount":   return String.valueOf(lock(type, a).getHoldCount());
                case "ttl":         return String.valueOf(lock(type, a).remainTimeToLive());
                case "incr": {      // deliberately NOT atomic: GET, optional sleep, SET value+1
                    need(a, 1);
                    RBucket<String> b = redisson.getBucket(a[0], StringCodec.INSTANCE);
                    String v = b.get();
                    long next = (v == null ? 0 : Long.parseLong(v)) + 1;
                    if (a.length > 1) {
                        Thread.sleep(Long.parseLong(a[1]));
                    }
                    b.set(String.valueOf(next));
                    return String.valueOf(next);
                }
                case "threadid":
                    return String.valueOf(Thread.currentThread().getId());
                default:
                    throw new IllegalArgumentException("unknown command: " + cmd);
            }
        }

        /** latch.CMD NAME ...: the countdown latch called NAME (RCountDownLatch). */
        private String latch(String cmd, String[] a) throws Exception {
            need(a, 1);
            RCountDownLatch l = redisson.getCountDownLatch(a[0]);
            switch (cmd) {
                case "setcount":
                    need(a, 2);
                    return String.valueOf(l.trySetCount(Long.parseLong(a[1])));
                case "countdown":
                    l.countDown();
                    return VOID;
                case "count":
                    return String.valueOf(l.getCount());
                case "await": // latch.await NAME [WAIT_MS]: true once open, false when WAIT_MS passed
                    if (a.length == 1) {
                        l.await();
                        return "true";
                    }
                    return String.valueOf(l.await(Long.parseLong(a[1]), TimeUnit.MILLISECONDS));
                default:
                    throw new IllegalArgumentException("unknown latch command: " + cmd);
            }
        }

        /** sem.CMD NAME ...: the semaphore called NAME (RSemaphore). */
        private String semaphore(String cmd, String[] a) throws Exception {
            need(a, 1);
            RSemaphore s = redisson.getSemaphore(a[0]);
            switch (cmd) {
                case "setpermits":
                    need(a, 2);
                    return String.valueOf(s.trySetPermits(Integer.parseInt(a[1])));
                case "acquire":
                    need(a, 2);
                    s.acquire(Integer.parseInt(a[1]));
                    return "true";
                case "tryacquire": // sem.tryacquire NAME PERMITS WAIT_MS
                    need(a, 3);
                    return String.valueOf(s.tryAcquire(Integer.parseInt(a[1]), Long.parseLong(a[2]), TimeUnit.MILLISECONDS));
                case "release":
                    need(a, 2);
                    s.release(Integer.parseInt(a[1]));
                    return VOID;
                case "available":
                    return String.valueOf(s.availablePermits());
                case "inside": { // sem.inside NAME COUNTER: acquire(1), INCR COUNTER, DECR COUNTER, release(1)
                    need(a, 2);
                    RAtomicLong inside = redisson.getAtomicLong(a[1]);
                    s.acquire(1);
                    try {
                        return String.valueOf(inside.incrementAndGet());
                    } finally {
                        inside.decrementAndGet();
                        s.release(1);
                    }
                }
                default:
                    throw new IllegalArgumentException("unknown semaphore command: " + cmd);
            }
        }

        /**
         * xsem.CMD NAME ...: the permit-expirable semaphore called NAME (RPermitExpirableSemaphore).
         * Permit ids travel comma-separated; an empty list is "none". LEASE_MS -1: never expires.
         */
        private String expirableSemaphore(String cmd, String[] a) throws Exception {
            need(a, 1);
            RPermitExpirableSemaphore s = redisson.getPermitExpirableSemaphore(a[0]);
            switch (cmd) {
                case "setpermits":
                    need(a, 2);
                    return String.valueOf(s.trySetPermits(Integer.parseInt(a[1])));
                case "addpermits":
                    need(a, 2);
                    s.addPermits(Integer.parseInt(a[1]));
                    return VOID;
                case "acquire": { // xsem.acquire NAME N LEASE_MS
                    need(a, 3);
                    int n = Integer.parseInt(a[1]);
                    long lease = Long.parseLong(a[2]);
                    if (n == 1 && !has(XSEM, "acquire", XSEM_N_LEASE)) { // several permits per call: Redisson 3.23.4+
                        return ids(List.of(s.acquire(lease, TimeUnit.MILLISECONDS)));
                    }
                    return ids(xsemCall(s, "acquire", XSEM_N_LEASE, n, lease, TimeUnit.MILLISECONDS));
                }
                case "tryacquire": { // xsem.tryacquire NAME N WAIT_MS LEASE_MS
                    need(a, 4);
                    int n = Integer.parseInt(a[1]);
                    long wait = Long.parseLong(a[2]), lease = Long.parseLong(a[3]);
                    if (n == 1 && !has(XSEM, "tryAcquire", XSEM_N_WAIT_LEASE)) {
                        String id = s.tryAcquire(wait, lease, TimeUnit.MILLISECONDS);
                        return ids(id == null ? null : List.of(id));
                    }
                    return ids(xsemCall(s, "tryAcquire", XSEM_N_WAIT_LEASE, n, wait, lease, TimeUnit.MILLISECONDS));
                }
                case "release": { // xsem.release NAME ID[,ID...]
                    need(a, 2);
                    List<String> ids = Arrays.asList(a[1].split(","));
                    if (ids.size() == 1) {
                        s.release(ids.get(0));
                    } else {
                        call(XSEM, s, "release", types(List.class), ids);
                    }
                    return VOID;
                }
                case "tryrelease":
                    need(a, 2);
                    return String.valueOf(s.tryRelease(a[1]));
                case "available":
                    return String.valueOf(s.availablePermits());
                case "acquired":
                    return String.valueOf(call(XSEM, s, "acquiredPermits", types()));
                case "permits":
                    return String.valueOf(call(XSEM, s, "getPermits", types()));
                case "lease": // Redisson 3.41.0+
                    need(a, 2);
                    return String.valueOf(call(XSEM, s, "getLeaseTime", types(String.class), a[1]));
                case "updatelease": // xsem.updatelease NAME ID LEASE_MS
                    need(a, 3);
                    return String.valueOf(s.updateLeaseTime(a[1], Long.parseLong(a[2]), TimeUnit.MILLISECONDS));
                case "inside": { // xsem.inside NAME COUNTER LEASE_MS: acquire one permit, INCR, DECR, release it
                    need(a, 3);
                    RAtomicLong inside = redisson.getAtomicLong(a[1]);
                    String id = s.acquire(Long.parseLong(a[2]), TimeUnit.MILLISECONDS);
                    try {
                        return String.valueOf(inside.incrementAndGet());
                    } finally {
                        inside.decrementAndGet();
                        s.release(id);
                    }
                }
                default:
                    throw new IllegalArgumentException("unknown expirable semaphore command: " + cmd);
            }
        }

        /**
         * multilock.CMD NAMES ... / redlock.CMD NAMES ...: a RedissonMultiLock or RedissonRedLock.
         * NAMES is comma-separated: one name means that name on every --group server; as many
         * names as --group servers, name i on server i; otherwise every name on the main client.
         */
        private String group(String type, String cmd, String[] a) throws Exception {
            need(a, 1);
            String key = type + ":" + a[0];
            RLock g = groups.get(key);
            if (g == null) {
                String[] names = a[0].split(",");
                List<RLock> members = new ArrayList<>();
                if (names.length == 1 && !group.isEmpty()) {
                    for (RedissonClient c : group) {
                        members.add(c.getLock(names[0]));
                    }
                } else if (names.length == group.size()) {
                    for (int i = 0; i < names.length; i++) {
                        members.add(group.get(i).getLock(names[i]));
                    }
                } else {
                    for (String n : names) {
                        members.add(redisson.getLock(n));
                    }
                }
                RLock[] arr = members.toArray(new RLock[0]);
                g = type.equals("redlock") ? new RedissonRedLock(arr) : new RedissonMultiLock(arr);
                groups.put(key, g);
            }
            switch (cmd) {
                case "lock": {
                    long lease = a.length > 1 ? Long.parseLong(a[1]) : -1;
                    if (lease == -1) {
                        g.lock();
                    } else {
                        g.lock(lease, TimeUnit.MILLISECONDS);
                    }
                    return "true";
                }
                case "trylock":
                    if (a.length == 1) {
                        return String.valueOf(g.tryLock());
                    }
                    need(a, 3);
                    return String.valueOf(g.tryLock(Long.parseLong(a[1]), Long.parseLong(a[2]), TimeUnit.MILLISECONDS));
                case "unlock":
                    g.unlock();
                    return VOID;
                case "isheld":
                    return String.valueOf(g.isHeldByCurrentThread());
                default:
                    throw new IllegalArgumentException("unknown " + type + " command: " + cmd);
            }
        }

        /**
         * The fenced lock's token commands; null for the commands it shares with RLock. RFencedLock
         * (Redisson 3.19.0+) is called by name, so that the peer builds with older versions too.
         */
        private String fenced(String cmd, String[] a) throws Exception {
            RLock l = lock("fenced", a);
            Class<?>[] waitLease = types(long.class, long.class, TimeUnit.class);
            switch (cmd) {
                case "lock": {
                    long lease = a.length > 1 ? Long.parseLong(a[1]) : -1;
                    return String.valueOf(lease == -1
                            ? call(FENCED, l, "lockAndGetToken", types())
                            : call(FENCED, l, "tryLockAndGetToken", waitLease, -1L, lease, TimeUnit.MILLISECONDS));
                }
                case "trylock":
                    if (a.length == 1) { // tryLockAndGetToken() itself waits without bound (its wait is -1)
                        return String.valueOf(call(FENCED, l, "tryLockAndGetToken", waitLease, 0L, -1L, TimeUnit.MILLISECONDS));
                    }
                    need(a, 3);
                    return String.valueOf(call(FENCED, l, "tryLockAndGetToken", waitLease,
                            Long.parseLong(a[1]), Long.parseLong(a[2]), TimeUnit.MILLISECONDS));
                case "token":
                    return String.valueOf(call(FENCED, l, "getToken", types()));
                default:
                    return null;
            }
        }

        private RLock lock(String type, String[] a) throws Exception {
            need(a, 1);
            String key = type + ":" + a[0];
            RLock l = locks.get(key);
            if (l == null) {
                l = newLock(type, a[0]);
                locks.put(key, l);
            }
            return l;
        }

        private RLock newLock(String type, String name) throws Exception {
            switch (type) {
                case "":       return redisson.getLock(name);
                case "fenced": return (RLock) call(RedissonClient.class, redisson, "getFencedLock", types(String.class), name);
                case "spin":   return redisson.getSpinLock(name);
                case "fair":   return redisson.getFairLock(name);
                case "read":   return redisson.getReadWriteLock(name).readLock();
                case "write":  return redisson.getReadWriteLock(name).writeLock();
                case "nonreentrant": // Redisson 4.4.0+
                    return (RLock) call(RedissonClient.class, redisson, "getNonReentrantLock", types(String.class), name);
                default:
                    throw new IllegalArgumentException("unknown lock type: " + type);
            }
        }
    }

    private interface Action {
        String run() throws Exception;
    }

    private void respond(String id, long start, Action action) {
        String value;
        try {
            value = "ok " + action.run();
        } catch (Throwable e) {
            Throwable c = e;
            while ((c instanceof CompletionException || c instanceof ExecutionException) && c.getCause() != null) {
                c = c.getCause();
            }
            String msg = c.getMessage() == null ? "" : c.getMessage().replaceAll("\\s+", " ").trim();
            value = "err " + c.getClass().getName() + (msg.isEmpty() ? "" : " " + msg);
        }
        reply(id + " " + value + " " + micros(start));
    }

    private synchronized void reply(String line) {
        out.print(line);
        out.print('\n');
        out.flush();
    }

    private record Request(String id, String cmd, String[] args) {}

    private static long micros(long startNanos) {
        return (System.nanoTime() - startNanos) / 1000;
    }

    private static String ids(List<String> ids) {
        return ids == null || ids.isEmpty() ? "none" : String.join(",", ids);
    }

    private static void need(String[] a, int n) {
        if (a.length < n) {
            throw new IllegalArgumentException("need " + n + " argument(s), got " + a.length);
        }
    }

    private static final Class<?> XSEM = RPermitExpirableSemaphore.class;
    private static final Class<?> FENCED = apiClass("org.redisson.api.RFencedLock");
    private static final Class<?>[] XSEM_N_LEASE = types(int.class, long.class, TimeUnit.class);
    private static final Class<?>[] XSEM_N_WAIT_LEASE = types(int.class, long.class, long.class, TimeUnit.class);

    /**
     * The Redisson API the peer drives, each with a method that exists exactly when the version
     * on the classpath has it. The peer compiles against every version; what a version lacks is
     * called by name (call), and answers UnsupportedOperationException.
     */
    private static Map<String, Method> probes() {
        Map<String, Method> m = new LinkedHashMap<>();
        Class<?> c = RedissonClient.class;
        m.put("lock", method(c, "getLock", String.class));
        m.put("fair", method(c, "getFairLock", String.class));
        m.put("readwrite", method(c, "getReadWriteLock", String.class));
        m.put("spin", method(c, "getSpinLock", String.class));
        m.put("fenced", method(c, "getFencedLock", String.class)); // 3.19.0+
        m.put("nonreentrant", method(c, "getNonReentrantLock", String.class)); // 4.4.0+
        m.put("latch", method(c, "getCountDownLatch", String.class));
        m.put("semaphore", method(c, "getSemaphore", String.class));
        m.put("xsem", method(c, "getPermitExpirableSemaphore", String.class));
        m.put("xsem-multi", method(XSEM, "acquire", XSEM_N_LEASE)); // 3.23.4+
        m.put("xsem-lease", method(XSEM, "getLeaseTime", String.class)); // 3.41.0+
        m.put("multilock", method(RedissonMultiLock.class, "tryLock", long.class, long.class, TimeUnit.class));
        m.put("redlock", method(RedissonRedLock.class, "tryLock", long.class, long.class, TimeUnit.class));
        m.put("sharded-mode", method(ClusterServersConfig.class, "getShardedSubscriptionMode")); // 3.29.0+
        return m;
    }

    /** The names of the probes that the Redisson version on the classpath has, comma-separated. */
    private static String features() {
        List<String> have = new ArrayList<>();
        probes().forEach((name, m) -> {
            if (m != null) {
                have.add(name);
            }
        });
        return String.join(",", have);
    }

    private static Class<?>[] types(Class<?>... types) {
        return types;
    }

    private static Class<?> apiClass(String name) {
        try {
            return Class.forName(name);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    private static Method method(Class<?> api, String name, Class<?>... types) {
        if (api == null) {
            return null;
        }
        try {
            return api.getMethod(name, types);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    private static boolean has(Class<?> api, String name, Class<?>... types) {
        return method(api, name, types) != null;
    }

    /** Calls api's method name(types) on target; UnsupportedOperationException when this Redisson lacks it. */
    private static Object call(Class<?> api, Object target, String name, Class<?>[] types, Object... args) throws Exception {
        Method m = method(api, name, types);
        if (m == null) {
            List<String> params = new ArrayList<>();
            for (Class<?> t : types) {
                params.add(t.getSimpleName());
            }
            String owner = api == null ? "the type" : api.getSimpleName();
            throw new UnsupportedOperationException("Redisson " + redissonVersion() + " has no "
                    + owner + "." + name + "(" + String.join(",", params) + ")");
        }
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            Throwable c = e.getCause();
            if (c instanceof Exception) {
                throw (Exception) c;
            }
            throw e;
        }
    }

    @SuppressWarnings("unchecked")
    private static List<String> xsemCall(RPermitExpirableSemaphore s, String name, Class<?>[] types, Object... args) throws Exception {
        return (List<String>) call(XSEM, s, name, types, args);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Object enumValue(Class<?> type, String name) {
        return Enum.valueOf((Class<? extends Enum>) type, name);
    }

    private static String redissonVersion() {
        try (InputStream in = Redisson.class.getResourceAsStream("/META-INF/maven/org.redisson/redisson/pom.properties")) {
            Properties p = new Properties();
            if (in != null) {
                p.load(in);
            }
            return p.getProperty("version", "unknown");
        } catch (Exception e) {
            return "unknown";
        }
    }

    private static Map<String, String> parseArgs(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (String arg : args) {
            if (!arg.startsWith("--") || !arg.contains("=")) {
                throw new IllegalArgumentException("expected --name=value, got " + arg);
            }
            int eq = arg.indexOf('=');
            m.put(arg.substring(2, eq), arg.substring(eq + 1));
        }
        return m;
    }

    private static String opt(Map<String, String> opts, String name, String env, String def) {
        String v = opts.get(name);
        if (v == null) {
            v = System.getenv(env);
        }
        return v == null ? def : v;
    }
}
