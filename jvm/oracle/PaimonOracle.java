// Apache Paimon as the differential oracle of tests/test_paimon_differential.py, driven through its Java
// API (paimon-bundle, Hadoop and Jackson from pyspark's jars). Usage: java PaimonOracle <warehouse>;
// stdin: one workload per line, {"columns": [[name, TYPE]], "primary_key": [...], "options": {...},
// "commits": [[[rowkind, [values]]]]}; stdout: one line each, {"rows": [[rowkind, values...]]} or
// {"error": "..."}. Values: integers and dates (days) as numbers, timestamps as epoch microseconds,
// doubles and decimals as text. tests/paimon_oracle.py compiles and runs it.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.RowKind;

/** Reads one table workload per stdin line (JSON), runs it through Paimon, prints its merged rows. */
public final class PaimonOracle {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, true, "UTF-8");
    System.setOut(System.err);
    Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(new Path(args[0])));
    catalog.createDatabase("oracle", true);
    new java.io.File(args[0], "spill").mkdirs();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    int counter = 0;
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      Identifier id = Identifier.create("oracle", "t" + counter++);
      ObjectNode answer = JSON.createObjectNode();
      try {
        answer.set("rows", run(catalog, id, JSON.readTree(line), args[0] + "/spill"));
      } catch (Exception e) {
        StringBuilder message = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
          message.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage()).append("\n");
        }
        answer.put("error", message.toString());
      }
      out.println(JSON.writeValueAsString(answer));
      catalog.dropTable(id, true);
    }
  }

  private static ArrayNode run(Catalog catalog, Identifier id, JsonNode workload, String spill)
      throws Exception {
    List<DataType> types = new ArrayList<>();
    Schema.Builder schema = Schema.newBuilder();
    for (JsonNode column : workload.get("columns")) {
      DataType type = parseType(column.get(1).asText());
      types.add(type);
      schema.column(column.get(0).asText(), type);
    }
    List<String> keys = new ArrayList<>();
    workload.get("primary_key").forEach(k -> keys.add(k.asText()));
    schema.primaryKey(keys);
    schema.option("bucket", "1");
    for (Iterator<Map.Entry<String, JsonNode>> it = workload.get("options").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> option = it.next();
      schema.option(option.getKey(), option.getValue().asText());
    }
    catalog.createTable(id, schema.build(), false);
    Table table = catalog.getTable(id);
    for (JsonNode batch : workload.get("commits")) {
      BatchWriteBuilder builder = table.newBatchWriteBuilder();
      // first-row and lookup need a spill directory.
      try (BatchTableWrite write = builder.newWrite().withIOManager(IOManager.create(spill));
          BatchTableCommit commit = builder.newCommit()) {
        for (JsonNode record : batch) {
          write.write(toRow(record, types));
        }
        // Fully compacted after every commit: the next commit merges with the stored row.
        write.compact(BinaryRow.EMPTY_ROW, 0, true);
        commit.commit(write.prepareCommit());
      }
    }
    ReadBuilder read = table.newReadBuilder();
    ArrayNode rows = JSON.createArrayNode();
    InternalRow.FieldGetter[] getters = new InternalRow.FieldGetter[types.size()];
    for (int i = 0; i < getters.length; i++) {
      getters[i] = InternalRow.createFieldGetter(types.get(i), i);
    }
    try (RecordReader<InternalRow> reader =
        read.newRead().createReader(read.newScan().plan().splits())) {
      reader.forEachRemaining(
          row -> {
            ArrayNode values = rows.addArray();
            values.add(row.getRowKind().shortString());
            for (int i = 0; i < getters.length; i++) {
              values.add(toJson(getters[i].getFieldOrNull(row), types.get(i)));
            }
          });
    }
    return rows;
  }

  private static DataType parseType(String text) {
    String upper = text.toUpperCase();
    if (upper.startsWith("DECIMAL(")) {
      String[] ps = upper.substring(8, upper.length() - 1).split(",");
      return DataTypes.DECIMAL(Integer.parseInt(ps[0].trim()), Integer.parseInt(ps[1].trim()));
    }
    switch (upper) {
      case "BOOLEAN": return DataTypes.BOOLEAN();
      case "TINYINT": return DataTypes.TINYINT();
      case "SMALLINT": return DataTypes.SMALLINT();
      case "INT": return DataTypes.INT();
      case "BIGINT": return DataTypes.BIGINT();
      case "FLOAT": return DataTypes.FLOAT();
      case "DOUBLE": return DataTypes.DOUBLE();
      case "STRING": return DataTypes.STRING();
      case "DATE": return DataTypes.DATE();
      case "TIMESTAMP": return DataTypes.TIMESTAMP(6);
      default: throw new IllegalArgumentException("unknown type " + text);
    }
  }

  private static GenericRow toRow(JsonNode record, List<DataType> types) {
    GenericRow row = new GenericRow(RowKind.fromShortString(record.get(0).asText()), types.size());
    JsonNode values = record.get(1);
    for (int i = 0; i < types.size(); i++) {
      JsonNode v = values.get(i);
      row.setField(i, v.isNull() ? null : fromJson(v, types.get(i)));
    }
    return row;
  }

  private static Object fromJson(JsonNode v, DataType type) {
    switch (type.getTypeRoot()) {
      case BOOLEAN: return v.asBoolean();
      case TINYINT: return (byte) v.asInt();
      case SMALLINT: return (short) v.asInt();
      case INTEGER: case DATE: return v.asInt();
      case BIGINT: return v.asLong();
      case FLOAT: return Float.parseFloat(v.asText());
      case DOUBLE: return Double.parseDouble(v.asText());
      case VARCHAR: return BinaryString.fromString(v.asText());
      case TIMESTAMP_WITHOUT_TIME_ZONE: return Timestamp.fromMicros(v.asLong());
      case DECIMAL:
        DecimalType d = (DecimalType) type;
        return Decimal.fromBigDecimal(new BigDecimal(v.asText()), d.getPrecision(), d.getScale());
      default: throw new IllegalArgumentException("unsupported " + type);
    }
  }

  private static JsonNode toJson(Object value, DataType type) {
    if (value == null) {
      return JSON.nullNode();
    }
    switch (type.getTypeRoot()) {
      case BOOLEAN: return JSON.getNodeFactory().booleanNode((Boolean) value);
      case TINYINT: return JSON.getNodeFactory().numberNode((Byte) value);
      case SMALLINT: return JSON.getNodeFactory().numberNode((Short) value);
      case INTEGER: case DATE: return JSON.getNodeFactory().numberNode((Integer) value);
      case BIGINT: return JSON.getNodeFactory().numberNode((Long) value);
      case FLOAT: return JSON.getNodeFactory().textNode(Float.toString((Float) value));
      case DOUBLE: return JSON.getNodeFactory().textNode(Double.toString((Double) value));
      case TIMESTAMP_WITHOUT_TIME_ZONE:
        return JSON.getNodeFactory().numberNode(((Timestamp) value).toMicros());
      case DECIMAL: return JSON.getNodeFactory().textNode(((Decimal) value).toBigDecimal().toPlainString());
      default: return JSON.getNodeFactory().textNode(value.toString());
    }
  }
}
