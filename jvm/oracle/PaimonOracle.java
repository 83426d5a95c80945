// Apache Paimon as the differential oracle of tests/test_paimon_differential.py, driven through its Java
// API (paimon-bundle, Hadoop and Jackson from pyspark's jars). Usage: java PaimonOracle <warehouse>;
// stdin: one workload per line, {"columns": [[name, TYPE]], "primary_key": [...], "options": {...},
// "commits": [[[rowkind, [values]]]]}; stdout: one line each, {"rows": [[rowkind, values...]],
// "changelog": [[[rowkind, values...]] per commit]} (the changelog only with a changelog-producer) or
// {"error": "..."}. Types are Spark's names. Values: integers and dates (days) as numbers, timestamps
// as epoch microseconds, doubles and decimals as text, bytes as base64; an array or a row as a JSON
// array, a map as an array of [key, value] pairs. tests/paimon_oracle.py compiles and runs it.
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
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.ScanMode;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

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
        run(catalog, id, JSON.readTree(line), args[0] + "/spill", answer);
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

  private static void run(
      Catalog catalog, Identifier id, JsonNode workload, String spill, ObjectNode answer)
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
    FileStoreTable table = (FileStoreTable) catalog.getTable(id);
    InternalRow.FieldGetter[] getters = new InternalRow.FieldGetter[types.size()];
    for (int i = 0; i < getters.length; i++) {
      getters[i] = InternalRow.createFieldGetter(types.get(i), i);
    }
    boolean producing = !"none".equals(table.coreOptions().changelogProducer().toString());
    ArrayNode changelog = JSON.createArrayNode();
    for (JsonNode batch : workload.get("commits")) {
      Long before = table.snapshotManager().latestSnapshotId();
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
      if (producing) {
        changelog.add(changelogSince(table, before == null ? 0 : before, getters, types));
      }
    }
    ReadBuilder read = table.newReadBuilder();
    answer.set("rows", rows(read, read.newScan().plan().splits(), getters, types));
    if (producing) {
      answer.set("changelog", changelog);
    }
  }

  /** The changelog files of the snapshots after `before` (a commit's APPEND and COMPACT snapshots), as
   * Paimon's streaming read of a changelog-producer table reads them (ChangelogFollowUpScanner). */
  private static ArrayNode changelogSince(
      FileStoreTable table, long before, InternalRow.FieldGetter[] getters, List<DataType> types)
      throws Exception {
    List<Split> splits = new ArrayList<>();
    Long latest = table.snapshotManager().latestSnapshotId();
    for (long id = before + 1; latest != null && id <= latest; id++) {
      Snapshot snapshot = table.snapshotManager().snapshot(id);
      if (snapshot.changelogManifestList() != null) {
        splits.addAll(
            table.newSnapshotReader().withMode(ScanMode.CHANGELOG).withSnapshot(snapshot).read().splits());
      }
    }
    return rows(table.newReadBuilder(), splits, getters, types);
  }

  private static ArrayNode rows(
      ReadBuilder read, List<Split> splits, InternalRow.FieldGetter[] getters, List<DataType> types)
      throws Exception {
    ArrayNode rows = JSON.createArrayNode();
    try (RecordReader<InternalRow> reader = read.newRead().createReader(splits)) {
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

  /** A Spark type name (`int`, `decimal(10,2)`, `array<int>`, `map<string,int>`, `struct<a:int>`). */
  private static DataType parseType(String text) {
    TypeReader reader = new TypeReader(text.replace(" ", "").toLowerCase());
    DataType type = reader.type();
    if (reader.at < reader.text.length()) {
      throw new IllegalArgumentException("unknown type " + text);
    }
    return type;
  }

  /** Reads one Spark type name at a time from `text`, recursively for the nested ones. */
  private static final class TypeReader {
    final String text;
    int at;

    TypeReader(String text) {
      this.text = text;
    }

    DataType type() {
      String name = word();
      switch (name) {
        case "array": {
          expect('<');
          DataType element = type();
          expect('>');
          return DataTypes.ARRAY(element);
        }
        case "map": {
          expect('<');
          DataType key = type();
          expect(',');
          DataType value = type();
          expect('>');
          return DataTypes.MAP(key.notNull(), value);
        }
        case "struct": {
          expect('<');
          List<DataField> fields = new ArrayList<>();
          do {
            String field = word();
            expect(':');
            fields.add(DataTypes.FIELD(fields.size(), field, type()));
          } while (accept(','));
          expect('>');
          return DataTypes.ROW(fields.toArray(new DataField[0]));
        }
        case "decimal": {
          expect('(');
          int precision = Integer.parseInt(word());
          expect(',');
          int scale = Integer.parseInt(word());
          expect(')');
          return DataTypes.DECIMAL(precision, scale);
        }
        case "boolean": return DataTypes.BOOLEAN();
        case "tinyint": return DataTypes.TINYINT();
        case "smallint": return DataTypes.SMALLINT();
        case "int": return DataTypes.INT();
        case "bigint": return DataTypes.BIGINT();
        case "float": return DataTypes.FLOAT();
        case "double": return DataTypes.DOUBLE();
        case "string": return DataTypes.STRING();
        case "binary": return DataTypes.BYTES();
        case "date": return DataTypes.DATE();
        case "timestamp_ntz": return DataTypes.TIMESTAMP(6);
        default: throw new IllegalArgumentException("unknown type " + name + " in " + text);
      }
    }

    String word() {
      int start = at;
      while (at < text.length() && "<>,:()".indexOf(text.charAt(at)) < 0) {
        at++;
      }
      return text.substring(start, at);
    }

    boolean accept(char c) {
      if (at < text.length() && text.charAt(at) == c) {
        at++;
        return true;
      }
      return false;
    }

    void expect(char c) {
      if (!accept(c)) {
        throw new IllegalArgumentException("expected '" + c + "' at " + at + " of " + text);
      }
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
      case VARBINARY: return Base64.getDecoder().decode(v.asText());
      case TIMESTAMP_WITHOUT_TIME_ZONE: return Timestamp.fromMicros(v.asLong());
      case DECIMAL:
        DecimalType d = (DecimalType) type;
        return Decimal.fromBigDecimal(new BigDecimal(v.asText()), d.getPrecision(), d.getScale());
      case ARRAY: {
        DataType element = ((ArrayType) type).getElementType();
        Object[] elements = new Object[v.size()];
        for (int i = 0; i < elements.length; i++) {
          elements[i] = v.get(i).isNull() ? null : fromJson(v.get(i), element);
        }
        return new GenericArray(elements);
      }
      case MAP: {
        MapType map = (MapType) type;
        Map<Object, Object> entries = new LinkedHashMap<>();
        for (JsonNode entry : v) {
          entries.put(
              fromJson(entry.get(0), map.getKeyType()),
              entry.get(1).isNull() ? null : fromJson(entry.get(1), map.getValueType()));
        }
        return new GenericMap(entries);
      }
      case ROW: {
        List<DataType> fields = ((RowType) type).getFieldTypes();
        GenericRow row = new GenericRow(fields.size());
        for (int i = 0; i < fields.size(); i++) {
          row.setField(i, v.get(i).isNull() ? null : fromJson(v.get(i), fields.get(i)));
        }
        return row;
      }
      default: throw new IllegalArgumentException("unsupported " + type);
    }
  }

  private static ArrayNode elements(InternalArray array, DataType type) {
    InternalArray.ElementGetter getter = InternalArray.createElementGetter(type);
    ArrayNode values = JSON.createArrayNode();
    for (int i = 0; i < array.size(); i++) {
      values.add(toJson(getter.getElementOrNull(array, i), type));
    }
    return values;
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
      case VARBINARY: return JSON.getNodeFactory().textNode(Base64.getEncoder().encodeToString((byte[]) value));
      case ARRAY: return elements((InternalArray) value, ((ArrayType) type).getElementType());
      case MAP: {
        MapType map = (MapType) type;
        InternalMap entries = (InternalMap) value;
        ArrayNode keys = elements(entries.keyArray(), map.getKeyType());
        ArrayNode values = elements(entries.valueArray(), map.getValueType());
        ArrayNode pairs = JSON.createArrayNode();
        for (int i = 0; i < keys.size(); i++) {
          pairs.addArray().add(keys.get(i)).add(values.get(i));
        }
        return pairs;
      }
      case ROW: {
        List<DataType> fields = ((RowType) type).getFieldTypes();
        ArrayNode values = JSON.createArrayNode();
        for (int i = 0; i < fields.size(); i++) {
          values.add(
              toJson(InternalRow.createFieldGetter(fields.get(i), i).getFieldOrNull((InternalRow) value),
                  fields.get(i)));
        }
        return values;
      }
      default: return JSON.getNodeFactory().textNode(value.toString());
    }
  }
}
