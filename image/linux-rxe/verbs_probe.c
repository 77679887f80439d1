/*
 * verbs_probe: Faultline's own probe of a Faultline node from Linux's
 * verbs (libibverbs on soft-RoCE), for the checks no stock tool makes:
 * WRITEs and READs into Faultline memory nothing ever touched (the node
 * faults and answers RNR NAK; the bytes must land), remote keys used
 * wrongly (the completion must say IBV_WC_REM_ACCESS_ERR and the
 * Faultline bytes stay as they were), and the Faultline node WRITEing and
 * READing a Linux memory region.
 *
 *   verbs_probe ADDR GID_INDEX
 *
 * It talks to `rdmapeer verbs-target` on ADDR, TCP port 18515, one text
 * line each way per command (see apps/rdmapeer/src/target.rs):
 *   qp QPN PSN A.B.C.D MTU   -> qp QPN PSN A.B.C.D      a new queue pair pair
 *   expose NAME LEN RIGHTS fresh|SEED -> key RKEY VA LEN RESIDENT
 *   revoke NAME              -> ok
 *   check NAME OFF LEN zero|SEED -> ok RESIDENT | bad AT GOT
 *   write RKEY VA LEN SEED   -> status NAME        (Faultline WRITEs here)
 *   read RKEY VA LEN SEED    -> status NAME        (Faultline READs, checks)
 *   faults                   -> faults N           (pages resolved for peers)
 *   bye                      -> bye
 * Prints `ok CHECK` or `FAIL CHECK: why` per check, then
 * `verbs_probe: P passed, F failed`; exits 1 if any failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PORT 18515
#define MTU IBV_MTU_1024
#define MTU_BYTES 1024

static int sock = -1;
static struct ibv_context *dev;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static int gid_index;
static union ibv_gid my_gid;
static struct in_addr peer;
static int passed, failed;

/* Byte i of pattern `seed`, the same on both sides (never zero). */
static uint8_t pattern(uint64_t i, unsigned seed)
{
	return (uint8_t)(i * 7 + (i >> 8) * 131 + seed) | 1;
}

static void verdict(const char *check, int ok, const char *fmt, ...)
{
	if (ok) {
		printf("ok %s\n", check);
		passed++;
		return;
	}
	va_list ap;
	printf("FAIL %s: ", check);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failed++;
}

static void die(const char *what)
{
	fprintf(stderr, "verbs_probe: %s: %s\n", what, strerror(errno));
	printf("verbs_probe: %d passed, %d failed (stopped: %s)\n", passed, failed + 1, what);
	exit(1);
}

/* Sends one command line and reads the one-line answer into `reply`. */
static void command(char *reply, size_t cap, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	if (write(sock, line, n) != n)
		die("writing a command");
	size_t got = 0;
	for (;;) {
		char c;
		ssize_t r = read(sock, &c, 1);
		if (r != 1)
			die("reading an answer");
		if (c == '\n')
			break;
		if (got + 1 < cap)
			reply[got++] = c;
	}
	reply[got] = 0;
}

static void connect_tcp(const char *addr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "verbs_probe: %s is not an IPv4 address\n", addr);
		exit(2);
	}
	peer = sa.sin_addr;
	for (int tries = 0; tries < 120; tries++) {
		sock = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(sock, (struct sockaddr *)&sa, sizeof sa) == 0)
			return;
		close(sock);
		sleep(1);
	}
	die("connecting to rdmapeer");
}

/* Waits for one completion (60 s at most); returns its status or -1. */
static int wait_completion(void)
{
	struct ibv_wc wc;
	for (int i = 0; i < 60000; i++) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			return -1;
		if (n == 1)
			return wc.status;
		usleep(1000);
	}
	return -1;
}

/* A fresh queue pair, connected to a fresh one on the Faultline node
 * (after a remote access error an RC queue pair is dead on both sides). */
static void new_qp(void)
{
	if (qp && ibv_destroy_qp(qp))
		die("ibv_destroy_qp");
	struct ibv_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	qp = ibv_create_qp(pd, &init);
	if (!qp)
		die("ibv_create_qp");
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("QP to INIT");
	unsigned my_psn = (unsigned)rand() & 0xffffff;
	char reply[256], ip[32];
	unsigned rqpn, rpsn;
	command(reply, sizeof reply, "qp %u %u %u.%u.%u.%u %d", qp->qp_num, my_psn, my_gid.raw[12],
		my_gid.raw[13], my_gid.raw[14], my_gid.raw[15], MTU_BYTES);
	if (sscanf(reply, "qp %u %u %31s", &rqpn, &rpsn, ip) != 3) {
		fprintf(stderr, "verbs_probe: answer to qp: %s\n", reply);
		die("the queue pair exchange");
	}
	struct in_addr rip;
	if (inet_pton(AF_INET, ip, &rip) != 1)
		die("the peer's queue pair address");
	union ibv_gid dgid = { 0 };
	dgid.raw[10] = 0xff;
	dgid.raw[11] = 0xff;
	memcpy(&dgid.raw[12], &rip, 4);
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = MTU;
	a.dest_qp_num = rqpn;
	a.rq_psn = rpsn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = dgid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("QP to RTR");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7; /* RNR NAKs: retry without end (the node is faulting) */
	a.sq_psn = my_psn;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("QP to RTS");
}

/* One RDMA WRITE or READ of `len` bytes of `mr` at `off`; its status. */
static int post(enum ibv_wr_opcode op, struct ibv_mr *mr, size_t off, uint64_t va, uint32_t rkey,
		uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr + off, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	wr.wr.rdma.remote_addr = va;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(qp, &wr, &bad))
		return -1;
	return wait_completion();
}

/* rxe's count of RNR NAKs this port received. */
static long rnr_naks_received(void)
{
	FILE *f = fopen("/sys/class/infiniband/rxe0/ports/1/hw_counters/rcvd_rnr_err", "r");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

struct exposure {
	uint32_t rkey;
	uint64_t va, len;
	long resident;
};

static struct exposure expose(const char *name, uint64_t len, const char *rights, const char *fill)
{
	char reply[256];
	struct exposure e;
	command(reply, sizeof reply, "expose %s %llu %s %s", name, (unsigned long long)len, rights, fill);
	unsigned long long va, l;
	if (sscanf(reply, "key %u %llu %llu %ld", &e.rkey, &va, &l, &e.resident) != 4) {
		fprintf(stderr, "verbs_probe: answer to expose: %s\n", reply);
		die("exposing");
	}
	e.va = va;
	e.len = l;
	return e;
}

/* Asks the node to check its bytes; 1 if they are as described. */
static int node_check(const char *name, uint64_t off, uint64_t len, const char *what, char *reply,
		      size_t cap)
{
	command(reply, cap, "check %s %llu %llu %s", name, (unsigned long long)off,
		(unsigned long long)len, what);
	return strncmp(reply, "ok", 2) == 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: verbs_probe ADDR GID_INDEX\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	gid_index = atoi(argv[2]);
	struct ibv_device **list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		die("no RDMA device");
	dev = ibv_open_device(list[0]);
	if (!dev)
		die("ibv_open_device");
	if (ibv_query_gid(dev, 1, gid_index, &my_gid))
		die("ibv_query_gid");
	pd = ibv_alloc_pd(dev);
	cq = pd ? ibv_create_cq(dev, 64, NULL, NULL, 0) : NULL;
	if (!cq)
		die("protection domain or completion queue");
	size_t big = 1 << 20;
	uint8_t *buf = aligned_alloc(4096, big);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, big,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!buf || !mr)
		die("ibv_reg_mr");
	connect_tcp(argv[1]);
	char reply[512];

	/* 1. WRITE into memory nothing on the node ever touched. */
	new_qp();
	struct exposure fresh = expose("fresh", 1 << 20, "rw", "fresh");
	uint32_t wlen = 300 * 1024 + 123;
	for (uint32_t i = 0; i < wlen; i++)
		buf[i] = pattern(i, 5);
	long rnr_before = rnr_naks_received();
	int st = post(IBV_WR_RDMA_WRITE, mr, 0, fresh.va + 100, fresh.rkey, wlen);
	long rnr_after = rnr_naks_received();
	verdict("write-into-untouched-memory-completes", st == IBV_WC_SUCCESS,
		"completion status %d (%s)", st, st >= 0 ? ibv_wc_status_str(st) : "none");
	verdict("the-untouched-exposure-was-not-resident", fresh.resident == 0,
		"%ld pages resident before any WRITE", fresh.resident);
	verdict("the-node-answered-rnr-naks", rnr_before >= 0 && rnr_after > rnr_before,
		"rxe's rcvd_rnr_err went from %ld to %ld", rnr_before, rnr_after);
	int landed = node_check("fresh", 100, wlen, "5", reply, sizeof reply);
	verdict("the-write-landed-byte-for-byte", landed, "%s", reply);
	landed = node_check("fresh", 0, 100, "zero", reply, sizeof reply) &&
		 node_check("fresh", 100 + wlen, 4096, "zero", reply, sizeof reply);
	verdict("nothing-around-the-write-changed", landed, "%s", reply);
	command(reply, sizeof reply, "faults");
	long faults = -1;
	sscanf(reply, "faults %ld", &faults);
	verdict("the-node-resolved-faults-for-it", faults > 0, "%s", reply);

	/* 2. READ of memory nothing touched: zeros. */
	struct exposure zero = expose("zero", 256 * 1024, "r", "fresh");
	memset(buf, 0xee, 256 * 1024);
	st = post(IBV_WR_RDMA_READ, mr, 0, zero.va, zero.rkey, 256 * 1024);
	int zeros = st == IBV_WC_SUCCESS;
	for (size_t i = 0; zeros && i < 256 * 1024; i++)
		zeros = buf[i] == 0;
	verdict("read-of-untouched-memory-gives-zeros", zeros, "status %d", st);

	/* 3. Keys used wrongly: each is refused, and the bytes stay. */
	struct exposure guarded = expose("guarded", 64 * 1024, "rw", "9");
	struct exposure ro = expose("readonly", 64 * 1024, "r", "11");
	struct exposure gone = expose("revoked", 64 * 1024, "rw", "13");
	command(reply, sizeof reply, "revoke revoked");
	for (uint32_t i = 0; i < 8192; i++)
		buf[i] = 0x42;
	struct {
		const char *name, *region, *seed;
		uint64_t va;
		uint32_t rkey, len;
	} refused[] = {
		{ "write-with-a-wrong-key-is-refused", "guarded", "9", guarded.va, guarded.rkey ^ 0x5a5a, 4096 },
		{ "write-past-the-end-is-refused", "guarded", "9", guarded.va + guarded.len - 100, guarded.rkey, 4096 },
		{ "write-before-the-start-is-refused", "guarded", "9", guarded.va - 4096, guarded.rkey, 8192 },
		{ "write-without-the-right-is-refused", "readonly", "11", ro.va, ro.rkey, 4096 },
		{ "write-after-revocation-is-refused", "revoked", "13", gone.va, gone.rkey, 4096 },
	};
	for (size_t c = 0; c < sizeof refused / sizeof refused[0]; c++) {
		new_qp();
		st = post(IBV_WR_RDMA_WRITE, mr, 0, refused[c].va, refused[c].rkey, refused[c].len);
		int unchanged = node_check(refused[c].region, 0, 64 * 1024, refused[c].seed, reply, sizeof reply);
		verdict(refused[c].name, st == IBV_WC_REM_ACCESS_ERR && unchanged,
			"completion %d (%s), bytes: %s", st, st >= 0 ? ibv_wc_status_str(st) : "none", reply);
	}

	/* 4. The other way: the node WRITEs and READs a Linux memory region. */
	new_qp();
	memset(buf, 0, 128 * 1024);
	command(reply, sizeof reply, "write %u %llu %u 21", mr->rkey, (unsigned long long)(uintptr_t)buf,
		128 * 1024);
	int same = strcmp(reply, "status Success") == 0;
	for (uint32_t i = 0; same && i < 128 * 1024; i++)
		same = buf[i] == pattern(i, 21);
	verdict("the-node-writes-a-linux-region", same, "%s", reply);
	for (uint32_t i = 0; i < 128 * 1024; i++)
		buf[i] = pattern(i, 23);
	command(reply, sizeof reply, "read %u %llu %u 23", mr->rkey, (unsigned long long)(uintptr_t)buf,
		128 * 1024);
	verdict("the-node-reads-a-linux-region", strcmp(reply, "status Success") == 0, "%s", reply);
	command(reply, sizeof reply, "write %u %llu %u 21", mr->rkey ^ 0x3c3c,
		(unsigned long long)(uintptr_t)buf, 4096);
	same = 1;
	for (uint32_t i = 0; same && i < 4096; i++)
		same = buf[i] == pattern(i, 23);
	verdict("the-node-gets-a-protection-error-for-a-wrong-key",
		strcmp(reply, "status RemoteProtectionError") == 0 && same, "%s", reply);

	command(reply, sizeof reply, "bye");
	printf("verbs_probe: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
