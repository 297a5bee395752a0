import Yams

/// A group app's sections (`shape: group`, docs/apps.md, "A group app"), read as strictly as the rest of the file.
extension Reader {
    /// `groups:` and `broadcast:` (docs/apps.md, "A group app").
    func declaredGroups(broadcast: Reader, plaintext: JSONTemplate) throws(ScenarioError) -> DeclaredAppSpec.Group {
        let m = try mapping(["table", "columns", "create", "join", "end"])
        func need(_ key: String) throws(ScenarioError) -> Reader {
            guard let r = m[key] else { throw error("groups needs \(key)") }
            return r
        }
        let cm = try need("columns").mapping(["id", "owner", "ended"])
        func column(_ key: String) throws(ScenarioError) -> String {
            guard let r = cm[key] else { throw (try need("columns")).error("groups.columns needs \(key)") }
            return try r.string()
        }
        var create: [DeclaredAppSpec.Write] = []
        for r in try need("create").sequence() { create.append(try r.declaredWrite(AppFile.createNames, extra: ["as"])) }
        guard create.contains(where: { $0.save.contains { $0.name == "group" } }) else {
            throw (try need("create")).error("the create steps save the new group's id as group (save: {group: id}): the others name it {{group.id}}")
        }
        var join: [DeclaredAppSpec.Group.Step] = []
        for r in try need("join").sequence() {
            let by = try r.mapping(["insert", "upsert", "update", "rpc", "on_conflict", "where", "body", "save", "return", "by", "as"])["by"]
            guard let by, ["owner", "member"].contains(try by.string()) else { throw r.error("a join step needs by: owner or by: member") }
            join.append(.init(byOwner: try by.string() == "owner", write: try r.declaredWrite(AppFile.joinNames, extra: ["by", "as"])))
        }
        guard !join.isEmpty else { throw (try need("join")).error("join needs at least one step: how a member comes into the group") }
        var end: [DeclaredAppSpec.Write] = []
        for r in try need("end").sequence() { end.append(try r.declaredWrite(AppFile.endNames, extra: ["as"])) }
        guard !end.isEmpty else { throw (try need("end")).error("end needs at least one step: how the owner ends the group") }

        let b = try broadcast.mapping(["topic", "event", "sender", "presence"])
        guard let topicNode = b["topic"], let event = b["event"], let sender = b["sender"] else {
            throw broadcast.error("broadcast needs topic (the private channel, over {{group.id}}), event and sender (the payload field naming who sent it)")
        }
        let topic = try topicNode.template(known: { AppFile.topicNames.contains($0) }, names: AppFile.topicNames, docs: "docs/templates.md")
        guard topic.contains("{{group.id}}") else { throw topicNode.error("the topic names the group ({{group.id}}): one private channel a group") }
        let senderField = try sender.string()
        if case .object(let members) = plaintext, members.contains(where: { $0.key == senderField }) {
            throw sender.error("the plaintext has a field \(senderField) already; the sender is set beside the plaintext's fields")
        }
        var presence: [DeclaredAppSpec.Group.Field]?
        if let p = b["presence"] {
            guard case .mapping(let pairs) = p.node, !pairs.isEmpty else { throw p.error("presence is a mapping of keys to values: {user_id: \"{{me.id}}\"}") }
            presence = []
            for (key, value) in pairs {
                let name = key.string ?? ""
                let r = Reader(file: file, node: value, path: p.child(name))
                presence?.append(.init(key: name, value: try r.template(known: { AppFile.presenceNames.contains($0) }, names: AppFile.presenceNames,
                                                                        docs: "docs/templates.md")))
            }
        }
        return DeclaredAppSpec.Group(table: try need("table").string(),
                                     columns: .init(id: try column("id"), owner: try column("owner"), ended: try column("ended")),
                                     create: create, join: join, end: end, topic: topic, event: try event.string(), sender: senderField,
                                     presence: presence)
    }
}
