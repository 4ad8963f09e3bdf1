// The fast DRAM of the simulator: an AXI4 subordinate with the timing and accounting of the
// Python model (sw/merit/sim/dram.py, cocotbext-axi's AxiRam behind a throttle), simulated inside
// the Verilator model instead of by Python coroutines. Simulation only: never part of the
// emitted MERIT-z Verilog.
//
// * Bandwidth: `bytes_per_cycle` in all, shared by R and W beats (8 bytes each); a token bucket
//   holding at most max(8, bytes_per_cycle); at most one beat per cycle; when both a read and a
//   write could go, they alternate.
// * Read latency: a read burst accepted at cycle c has its beats ready from cycle
//   c + latency + 1; bursts are pipelined (up to DEPTH in flight) and answered in order.
// * Writes: W beats are buffered (32 beats, as the Python model's write buffer) and written as
//   soon as their AW is known; the B response follows the burst's last beat.
// * A beat outside the memory answers SLVERR (read data 0, nothing written) and is counted.
// * Accounting: `cycle` counts clock edges out of reset; `first_request` is the first cycle with
//   ARVALID or AWVALID, `last_response` the cycle of the last B handshake.
// * The memory lives in C++ (merit_dram.cpp): loaded from and dumped to a binary file on the
//   `load` / `dump` pulses (paths: plusargs +merit_dram_in=, +merit_dram_out=).
// * Trace: with the environment variable MERIT_DRAM_TRACE naming a file, every handshake of
//   AR, R, AW, W and B is written to it, one line each (merit_dram.cpp says how); nothing else
//   changes.
//
// The decisions of one clock edge take effect one edge later (R beats presented, WREADY
// raised), as the Python model's coroutines do.

module merit_sim_dram #(
    parameter int ID_W = 4,
    parameter int DEPTH = 256          // read / write bursts in flight (a power of two)
) (
    input  logic clk,
    input  logic rst,
    input  logic [7:0] bytes_per_cycle,
    input  logic [15:0] latency,
    input  logic load,
    input  logic dump,
    // AXI4 subordinate, 64-bit data
    input  logic arvalid, output logic arready, input logic [ID_W-1:0] arid,
    input  logic [31:0] araddr, input logic [7:0] arlen, input logic [2:0] arsize,
    input  logic [1:0] arburst,
    output logic rvalid, input logic rready, output logic [ID_W-1:0] rid,
    output logic [63:0] rdata, output logic [1:0] rresp, output logic rlast,
    input  logic awvalid, output logic awready, input logic [ID_W-1:0] awid,
    input  logic [31:0] awaddr, input logic [7:0] awlen, input logic [2:0] awsize,
    input  logic [1:0] awburst,
    input  logic wvalid, output logic wready, input logic [63:0] wdata, input logic [7:0] wstrb,
    input  logic wlast,
    output logic bvalid, input logic bready, output logic [ID_W-1:0] bid, output logic [1:0] bresp,
    // accounting
    output logic [63:0] size,
    output logic [63:0] cycle,
    output logic [63:0] first_request,
    output logic [63:0] last_response,
    output logic [63:0] last_handshake,
    output logic [63:0] request_cycles,
    output logic [31:0] read_beats,
    output logic [31:0] write_beats,
    output logic [31:0] reads_owed,
    output logic [31:0] writes_owed,
    output logic [31:0] outside_count,
    output logic [31:0] outside_addr,      // the first access outside the memory
    output logic outside_write             //   and whether it was a write
);
    import "DPI-C" function longint merit_dram_load(input string path);
    import "DPI-C" function int merit_dram_dump(input string path);
    import "DPI-C" function longint merit_dram_read(input longint address);
    import "DPI-C" function void merit_dram_write(input longint address, input longint data,
                                                 input int strobes);
    import "DPI-C" function int merit_dram_trace_open();
    import "DPI-C" function void merit_dram_trace(input longint cycle, input int channel,
                                                 input int id, input longint address,
                                                 input int length);

    localparam int W_DEPTH = 32;       // the write buffer
    localparam int PW = $clog2(DEPTH);

    string in_path, out_path;
    int tracing;
    initial begin
        tracing = merit_dram_trace_open();
        if (!$value$plusargs("merit_dram_in=%s", in_path)) in_path = "dram_in.bin";
        if (!$value$plusargs("merit_dram_out=%s", out_path)) out_path = "dram_out.bin";
    end

    // read bursts not yet fully presented
    logic [ID_W-1:0] rb_id [DEPTH];
    logic [31:0] rb_addr [DEPTH];
    logic [7:0] rb_len [DEPTH];
    logic [2:0] rb_size [DEPTH];
    logic [63:0] rb_at [DEPTH];
    logic [PW-1:0] rb_head, rb_tail;
    int rb_n;
    int r_beat;                       // beats of the head burst presented
    // write bursts (AW) not yet complete, W beats not yet written, B responses not yet offered
    logic [ID_W-1:0] aw_id [DEPTH];
    logic [31:0] aw_addr [DEPTH];
    logic [7:0] aw_len [DEPTH];
    logic [2:0] aw_size [DEPTH];
    logic [PW-1:0] aw_head, aw_tail;
    int aw_n;
    int w_beat;                       // beats of the head AW burst written
    logic [1:0] w_resp;               // its response so far
    logic [63:0] wb_data [W_DEPTH];
    logic [7:0] wb_strb [W_DEPTH];
    logic [4:0] wb_head, wb_tail;
    int wb_n;
    logic [ID_W-1:0] b_id [DEPTH];
    logic [1:0] b_resp [DEPTH];
    logic [PW-1:0] b_head, b_tail;
    int b_n;

    int tokens;
    logic last_was_write, grant_read, grant_write, seen_request;

    function automatic logic [63:0] beat_address(input logic [31:0] address, input logic [2:0] sz,
                                                 input int beat);
        logic [63:0] aligned = {32'b0, address} & ~((64'd1 << sz) - 1);
        return (aligned + (64'(beat) << sz)) & ~64'd7;
    endfunction

    function automatic int top_strobe(input logic [7:0] strobes);
        int top = -1;
        for (int i = 0; i < 8; i++) if (strobes[i]) top = i;
        return top;
    endfunction

    always_ff @(posedge clk) begin
        if (load) size <= 64'(merit_dram_load(in_path));
        if (dump) void'(merit_dram_dump(out_path));
    end

    always @(posedge clk) begin : step
        logic ar_fire, r_fire, aw_fire, w_fire, b_fire, read_ok, write_ok, give_read, give_write;
        logic [63:0] cyc, address;
        int top, budget;
        if (rst) begin
            rb_head = 0; rb_tail = 0; rb_n = 0; r_beat = 0;
            aw_head = 0; aw_tail = 0; aw_n = 0; w_beat = 0; w_resp = 0;
            wb_head = 0; wb_tail = 0; wb_n = 0;
            b_head = 0; b_tail = 0; b_n = 0;
            tokens = 0; last_was_write = 0; grant_read = 0; grant_write = 0;
            seen_request = 0;
            cycle <= 0; first_request <= 0; last_response <= 0; last_handshake <= 0;
            request_cycles <= 0; read_beats <= 0; write_beats <= 0; reads_owed <= 0;
            writes_owed <= 0; outside_count <= 0; outside_addr <= 0; outside_write <= 0;
            arready <= 0; awready <= 0; rvalid <= 0; wready <= 0; bvalid <= 0;
            rid <= 0; rdata <= 0; rresp <= 0; rlast <= 0; bid <= 0; bresp <= 0;
        end else begin
            cyc = cycle + 1;
            cycle <= cyc;
            ar_fire = arvalid && arready;
            r_fire = rvalid && rready;
            aw_fire = awvalid && awready;
            w_fire = wvalid && wready;
            b_fire = bvalid && bready;
            if (arvalid || awvalid) begin
                request_cycles <= request_cycles + 1;
                if (!seen_request) first_request <= cyc;
                seen_request = 1;
            end
            if (b_fire) last_response <= cyc;
            if (tracing != 0) begin
                if (ar_fire) merit_dram_trace(longint'(cyc), 0, int'(arid), longint'(araddr),
                                              int'(arlen));
                if (r_fire) merit_dram_trace(longint'(cyc), 1, int'(rid), 0, int'(rlast));
                if (aw_fire) merit_dram_trace(longint'(cyc), 2, int'(awid), longint'(awaddr),
                                              int'(awlen));
                if (w_fire) merit_dram_trace(longint'(cyc), 3, 0, longint'(wstrb), int'(wlast));
                if (b_fire) merit_dram_trace(longint'(cyc), 4, int'(bid), 0, 0);
            end
            if (ar_fire || r_fire || aw_fire || w_fire || b_fire) last_handshake <= cyc;
            read_beats <= read_beats + 32'(r_fire);
            write_beats <= write_beats + 32'(w_fire);
            reads_owed <= reads_owed + 32'(ar_fire) - 32'(r_fire && rlast);
            writes_owed <= writes_owed + 32'(aw_fire) - 32'(b_fire);

            // R: the beat granted at the last edge is presented (the previous one was taken)
            if (r_fire || !rvalid) begin
                rvalid <= 0;
                if (grant_read && rb_n != 0) begin
                    address = beat_address(rb_addr[rb_head], rb_size[rb_head], r_beat);
                    rvalid <= 1;
                    rid <= rb_id[rb_head];
                    rlast <= r_beat == int'(rb_len[rb_head]);
                    if (address + 8 > size) begin
                        rdata <= 0;
                        rresp <= 2'b10;
                        if (outside_count == 0) begin
                            outside_addr <= address[31:0]; outside_write <= 0;
                        end
                        outside_count <= outside_count + 1;
                    end else begin
                        rdata <= merit_dram_read(address);
                        rresp <= 2'b00;
                    end
                    if (r_beat == int'(rb_len[rb_head])) begin
                        rb_head = rb_head + 1; rb_n = rb_n - 1; r_beat = 0;
                    end else begin
                        r_beat = r_beat + 1;
                    end
                end
            end
            if (ar_fire) begin
                rb_id[rb_tail] = arid; rb_addr[rb_tail] = araddr; rb_len[rb_tail] = arlen;
                rb_size[rb_tail] = arsize; rb_at[rb_tail] = cyc + 64'(latency) + 1;
                rb_tail = rb_tail + 1; rb_n = rb_n + 1;
            end

            // B: a response queued at an earlier edge is offered (the previous one was taken)
            if (b_fire || !bvalid) begin
                bvalid <= 0;
                if (b_n != 0) begin
                    bvalid <= 1; bid <= b_id[b_head]; bresp <= b_resp[b_head];
                    b_head = b_head + 1; b_n = b_n - 1;
                end
            end
            // AW, W in; W beats written as soon as their burst is known
            if (aw_fire) begin
                aw_id[aw_tail] = awid; aw_addr[aw_tail] = awaddr; aw_len[aw_tail] = awlen;
                aw_size[aw_tail] = awsize; aw_tail = aw_tail + 1; aw_n = aw_n + 1;
            end
            if (w_fire) begin
                wb_data[wb_tail] = wdata; wb_strb[wb_tail] = wstrb;
                wb_tail = wb_tail + 1; wb_n = wb_n + 1;
            end
            for (budget = 0; budget <= W_DEPTH; budget++) begin
                if (wb_n == 0 || aw_n == 0) break;
                address = beat_address(aw_addr[aw_head], aw_size[aw_head], w_beat);
                top = top_strobe(wb_strb[wb_head]);
                if (top >= 0) begin
                    if (address + 64'(top) + 1 > size) begin
                        w_resp = 2'b10;
                        if (outside_count == 0) begin
                            outside_addr <= address[31:0]; outside_write <= 1;
                        end
                        outside_count <= outside_count + 1;
                    end else begin
                        merit_dram_write(address, wb_data[wb_head], int'(wb_strb[wb_head]));
                    end
                end
                wb_head = wb_head + 1; wb_n = wb_n - 1;
                if (w_beat == int'(aw_len[aw_head])) begin
                    b_id[b_tail] = aw_id[aw_head]; b_resp[b_tail] = w_resp;
                    b_tail = b_tail + 1; b_n = b_n + 1;
                    aw_head = aw_head + 1; aw_n = aw_n - 1; w_beat = 0; w_resp = 0;
                end else begin
                    w_beat = w_beat + 1;
                end
            end
            wready <= grant_write && wb_n < W_DEPTH;

            // bandwidth: grant at most one beat for the next edge
            tokens = tokens + int'(bytes_per_cycle);
            if (tokens > (bytes_per_cycle > 8 ? int'(bytes_per_cycle) : 8))
                tokens = bytes_per_cycle > 8 ? int'(bytes_per_cycle) : 8;
            read_ok = rb_n != 0 && rb_at[rb_head] <= cyc;
            write_ok = wvalid;
            give_read = 0; give_write = 0;
            if (tokens >= 8) begin
                if (read_ok && (!write_ok || last_was_write)) give_read = 1;
                else if (write_ok) give_write = 1;
            end
            if (give_read || give_write) begin
                tokens = tokens - 8;
                last_was_write = give_write;
            end
            grant_read = give_read;
            grant_write = give_write;
            arready <= rb_n < DEPTH - 1;
            awready <= aw_n < DEPTH - 1 && b_n < DEPTH - 1;
        end
    end
endmodule
