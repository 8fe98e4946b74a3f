package dev.paramserver.bench.train;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PserverTablesTest {
  @Test
  void parse_readsRowsAndBytesPerTableAndSumsTheHeapPools() {
    String body =
        String.join(
            "\n",
            "# HELP paramserver_pserver_sparse_rows Rows held by a sparse table",
            "paramserver_pserver_sparse_rows{table=\"emb\"} 3000000.0",
            "paramserver_pserver_sparse_rows{table=\"other\"} 5.0",
            "paramserver_pserver_sparse_bytes{table=\"emb\"} 2.4E8",
            "jvm_memory_used_bytes{area=\"heap\",id=\"Eden Space\"} 1000.0",
            "jvm_memory_used_bytes{area=\"heap\",id=\"Tenured Gen\"} 2000.0",
            "jvm_memory_used_bytes{area=\"nonheap\",id=\"Metaspace\"} 99999.0");

    assertThat(PserverTables.parse(body))
        .containsEntry("rows_emb", 3000000.0)
        .containsEntry("rows_other", 5.0)
        .containsEntry("bytes_emb", 2.4e8)
        .containsEntry("heap_used_bytes", 3000.0)
        .hasSize(4);
  }
}
