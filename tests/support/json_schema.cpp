#include "json_schema.hpp"

#include <stdexcept>

#include "process.hpp"

namespace tea::test {

std::string schema_problems(const std::vector<std::pair<nlohmann::json, std::string>> &pairs,
                            const std::string &scratch) {
    auto list = nlohmann::json::array();
    for (const auto &[doc, schema] : pairs) {
        list.push_back({{"doc", doc}, {"schema", schema}});
    }
    const auto file = scratch + "/documents-to-validate.json";
    write_file(file, list.dump());
    const auto o = run(
        {"/usr/bin/python3", "-c",
         "import json,sys,jsonschema\n"
         "for i, item in enumerate(json.load(open(sys.argv[1]))):\n"
         "    schema = json.load(open(item['schema']))\n"
         "    for e in "
         "jsonschema.validators.validator_for(schema)(schema).iter_errors(item['doc']):\n"
         "        print(i, item['schema'].rsplit('/', 1)[-1], list(e.absolute_path), e.message)\n",
         file},
        {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"});
    if (o.status != 0) {
        throw std::runtime_error("python3-jsonschema did not run: " + o.err);
    }
    return o.out;
}

}  // namespace tea::test
